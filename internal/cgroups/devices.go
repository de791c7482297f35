package cgroups

import (
	"fmt"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The sandbox's processes need no host device: the sentry emulates the
// guest's, and what the CLI opens for it (/dev/kvm, the terminal) it
// passes as descriptors, which the device controller does not check
// again. So every device is denied first and only the config's own
// rules are added, in order, as the device controller's allowlist: a
// sentry that were subverted still could not open a host disk.

func checkDeviceRule(i int, d specs.LinuxDeviceCgroup) error {
	field := fmt.Sprintf("linux.resources.devices[%d]", i)
	switch d.Type {
	case "", "a", "b", "c":
	default:
		return fieldError(field+".type", d.Type, "must be a, b or c")
	}
	for _, c := range d.Access {
		if !strings.ContainsRune("rwm", c) {
			return fieldError(field+".access", d.Access, "may hold only r, w and m")
		}
	}
	for _, n := range []struct {
		name string
		v    *int64
	}{{"major", d.Major}, {"minor", d.Minor}} {
		if n.v != nil && *n.v < -1 {
			return fieldError(field+"."+n.name, *n.v, "must be a device number, or -1 for any")
		}
	}
	return nil
}

// deviceRule is a rule in the v1 devices.allow and devices.deny syntax:
// "TYPE MAJOR:MINOR ACCESS" with * for any number.
func deviceRule(d specs.LinuxDeviceCgroup) string {
	typ := d.Type
	if typ == "" {
		typ = "a"
	}
	num := func(p *int64) string {
		if p == nil || *p == -1 {
			return "*"
		}
		return strconv.FormatInt(*p, 10)
	}
	access := d.Access
	if access == "" {
		access = "rwm"
	}
	if typ == "a" {
		return "a" // the kernel takes "a" alone for every device, whatever follows
	}
	return fmt.Sprintf("%s %s:%s %s", typ, num(d.Major), num(d.Minor), access)
}

// applyDevicesV1 writes the allowlist into a v1 devices cgroup: deny
// everything, then each rule of the config in order.
func applyDevicesV1(f files, rules []specs.LinuxDeviceCgroup) error {
	if err := f.write("devices.deny", "a"); err != nil {
		return err
	}
	for _, d := range rules {
		name := "devices.deny"
		if d.Allow {
			name = "devices.allow"
		}
		if err := f.write(name, deviceRule(d)); err != nil {
			return err
		}
	}
	return nil
}
