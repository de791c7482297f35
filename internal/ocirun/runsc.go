package ocirun

// RunscFlags are the global flags gVisor's runsc is given wherever this
// project runs it: --network=none, because its sandbox would otherwise get
// the host's network stack where the containers here ask for a network
// namespace of their own, with only loopback in it (what runc gives them);
// and --platform=platform, unless platform is "", which leaves runsc on its
// own default.
func RunscFlags(platform string) []string {
	flags := []string{"--network=none"}
	if platform != "" {
		flags = append([]string{"--platform=" + platform}, flags...)
	}
	return flags
}
