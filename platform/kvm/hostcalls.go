package kvm

import "golang.org/x/sys/unix"

// HostIoctls are the KVM ioctls the platform makes once New has returned
// (on the VM's and the vCPUs' descriptors): a confined sentry's seccomp
// filter allows these and no other KVM request. Opening the device,
// creating the VM and reading its capabilities happen in New, before the
// filter.
var HostIoctls = []uint64{
	kvmCreateVCPU, kvmRun, kvmSetUserMemoryRegion,
	kvmGetSregs, kvmSetSregs, kvmSetCPUID2, kvmSetMSRS, kvmSetXCRS,
	kvmGetXsave, kvmSetXsave, kvmSetDeviceAttr,
}

// DeviceFD, when not -1, is an open KVM device that New takes instead of
// opening Device: a confined sentry can neither name it (its root is
// empty) nor open it (it is the overflow user), so the CLI opens it and
// hands it over.
var DeviceFD = -1

func openDevice(path string) (int, error) {
	if DeviceFD >= 0 {
		return DeviceFD, nil
	}
	return unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
}
