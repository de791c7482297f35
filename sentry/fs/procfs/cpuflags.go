package procfs

import (
	"strings"

	"golang.org/x/sys/cpu"
)

// cpuFlags lists, in /proc/cpuinfo's names, the CPU features programs look
// for before choosing an implementation.
func cpuFlags() string {
	x := cpu.X86
	var flags []string
	for _, f := range []struct {
		has  bool
		name string
	}{
		{true, "fpu"}, {true, "tsc"}, {true, "cx8"}, {true, "cmov"}, {true, "mmx"}, {true, "fxsr"},
		{true, "sse"}, {true, "sse2"}, {x.HasSSE3, "pni"}, {x.HasPCLMULQDQ, "pclmulqdq"}, {x.HasSSSE3, "ssse3"},
		{x.HasFMA, "fma"}, {x.HasCX16, "cx16"}, {x.HasSSE41, "sse4_1"}, {x.HasSSE42, "sse4_2"},
		{x.HasPOPCNT, "popcnt"}, {x.HasAES, "aes"}, {x.HasOSXSAVE, "xsave"}, {x.HasAVX, "avx"},
		{x.HasRDRAND, "rdrand"}, {true, "lm"}, {x.HasBMI1, "bmi1"}, {x.HasAVX2, "avx2"}, {x.HasBMI2, "bmi2"},
		{x.HasERMS, "erms"}, {x.HasAVX512F, "avx512f"}, {x.HasAVX512DQ, "avx512dq"}, {x.HasRDSEED, "rdseed"},
		{x.HasADX, "adx"}, {x.HasAVX512CD, "avx512cd"}, {x.HasAVX512BW, "avx512bw"}, {x.HasAVX512VL, "avx512vl"},
	} {
		if f.has {
			flags = append(flags, f.name)
		}
	}
	return strings.Join(flags, " ")
}
