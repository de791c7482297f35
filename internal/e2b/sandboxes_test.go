package e2b

import (
	"slices"
	"testing"
)

// A process's environment is layered: moat's PATH, then what the
// template's image sets, then the user's HOME, USER and LOGNAME, the
// sandbox's envVars (create), and the process's own envs, each over the
// one before.
func TestProcessEnvironmentLayersImageSandboxAndProcess(t *testing.T) {
	sb := &sandbox{
		imageEnv: []string{"PATH=/opt/image/bin:/usr/bin", "LANG=C.UTF-8", "HOME=/image-home", "FROM=image", "=bad", "noequals"},
		envVars:  map[string]string{"FROM": "sandbox", "SANDBOX": "1"},
	}
	got := sb.spec(plainUser, []string{"env"}, "", map[string]string{"SANDBOX": "process"}).Env
	want := []string{"FROM=sandbox", "HOME=/home/user", "LANG=C.UTF-8", "LOGNAME=user",
		"PATH=/opt/image/bin:/usr/bin", "SANDBOX=process", "USER=user"}
	if !slices.Equal(got, want) {
		t.Errorf("env\n%q\nwant\n%q", got, want)
	}
	plain := (&sandbox{}).spec(rootUser, []string{"env"}, "", nil).Env
	if want := []string{"HOME=/root", "LOGNAME=root", defaultPath, "USER=root"}; !slices.Equal(plain, want) {
		t.Errorf("without an image: %q, want %q", plain, want)
	}
}
