package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// settingsError is a settings file that cannot be used, naming the file
// and, when it knows it, the line.
type settingsError struct {
	file string
	line int // 0: the file as a whole
	msg  string
}

func (e *settingsError) Error() string {
	if e.line == 0 {
		return fmt.Sprintf("settings %s: %s", e.file, e.msg)
	}
	return fmt.Sprintf("settings %s: line %d: %s", e.file, e.line, e.msg)
}

// defaultSettingsPath is where `moat sandbox` looks for its settings
// without --settings: $XDG_CONFIG_HOME/moat/sandbox.toml, else
// ~/.config/moat/sandbox.toml; "" when there is no home to look in.
func defaultSettingsPath(environ []string, home string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "XDG_CONFIG_HOME="); ok && filepath.IsAbs(v) {
			return filepath.Join(v, "moat", "sandbox.toml")
		}
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "moat", "sandbox.toml")
}

// loadSettings reads the policy in the settings file at path. A missing
// file is no settings when it is the default one (required false), an
// error when --settings named it.
func loadSettings(path string, required bool) (localPolicy, error) {
	var p localPolicy
	if path == "" {
		return p, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return p, nil
	}
	if err != nil {
		return p, &settingsError{file: path, msg: statReason(err)}
	}
	return parseSettings(path, string(data))
}

// parseSettings decodes a settings file's text. Every problem names its
// line: a syntax error or a value of the wrong type as the TOML decoder
// finds it, a key moat does not know by the line that sets it (a typo
// must not silently loosen the policy's intent).
func parseSettings(path, text string) (localPolicy, error) {
	var p localPolicy
	md, err := toml.Decode(text, &p)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return p, &settingsError{file: path, line: pe.Position.Line, msg: pe.Message}
		}
		return p, &settingsError{file: path, line: lineOfTOMLError(err), msg: trimTOMLError(err)}
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		key := undecoded[0]
		return p, &settingsError{file: path, line: lineOfKey(text, key), msg: fmt.Sprintf("unknown key %q (see docs/agents.md)", key.String())}
	}
	if _, err := localTimeout(p.Timeout); err != nil {
		return p, &settingsError{file: path, line: lineOfKey(text, toml.Key{"timeout"}), msg: strings.TrimPrefix(err.Error(), "--timeout: ")}
	}
	return p, nil
}

// lineOfTOMLError finds the "line N" the decoder writes into its type
// errors, which are not ParseErrors.
func lineOfTOMLError(err error) int {
	var n int
	if _, scanErr := fmt.Sscanf(strings.TrimPrefix(err.Error(), "toml: "), "line %d", &n); scanErr == nil {
		return n
	}
	return 0
}

// trimTOMLError drops the decoder's "toml: line N (last key ...):" prefix,
// which the settingsError says itself.
func trimTOMLError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "toml: ")
	if strings.HasPrefix(msg, "line ") || strings.HasPrefix(msg, "(last key") {
		if _, rest, ok := strings.Cut(msg, "): "); ok {
			return rest
		}
	}
	return msg
}

// lineOfKey is the first line of text that sets key's last part (the
// decoder keeps no position for keys it did not decode); 0 if none does.
func lineOfKey(text string, key toml.Key) int {
	name := key[len(key)-1]
	for i, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(l, name); ok {
			if r := strings.TrimSpace(rest); strings.HasPrefix(r, "=") {
				return i + 1
			}
		}
		if l == "["+name+"]" {
			return i + 1
		}
	}
	return 0
}
