// Package seccomp is moat's one implementation of seccomp's classic BPF:
// programs (Insn), Linux's checks on them (Check), an interpreter (Run), a
// compiler from rule tables to programs (Filter.Compile), chains of filters
// with Linux's precedence of actions (Chain), and the host's installation
// of a program (Install).
//
// Both sides of the sandbox use it. The host side compiles the sentry's and
// the gofer's allowlists (internal/confine) and installs them in the host
// kernel. The guest side compiles the container's linux.seccomp profile and
// runs the guest's own seccomp(2) programs in the sentry, on every guest
// system call (sentry/kernel), where nothing is ever installed in the host.
//
// It must never let a program it has not checked run: Run assumes Check
// passed, as Linux's interpreter assumes its checker did.
package seccomp
