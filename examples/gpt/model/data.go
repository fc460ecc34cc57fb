package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/peel-ml/peel"
)

// Vocab is a character-level tokenizer: token i is Symbols[i], a rune
// (or, with Bytes, a byte), in increasing order.
type Vocab struct {
	Symbols []rune
	Bytes   bool // symbols are bytes, not runes
	index   map[rune]int64
}

// NewVocab returns the vocabulary of the symbols of text: its runes, or
// with bytes its bytes.
func NewVocab(text string, bytes bool) *Vocab {
	seen := map[rune]bool{}
	if bytes {
		for i := 0; i < len(text); i++ {
			seen[rune(text[i])] = true
		}
	} else {
		for _, r := range text {
			seen[r] = true
		}
	}
	syms := make([]rune, 0, len(seen))
	for r := range seen {
		syms = append(syms, r)
	}
	slices.Sort(syms)
	return newVocab(syms, bytes)
}

func newVocab(syms []rune, bytes bool) *Vocab {
	v := &Vocab{Symbols: syms, Bytes: bytes, index: make(map[rune]int64, len(syms))}
	for i, r := range syms {
		v.index[r] = int64(i)
	}
	return v
}

// Size is the number of tokens.
func (v *Vocab) Size() int { return len(v.Symbols) }

// Encode returns the tokens of s. It returns an error naming the first
// symbol that is not in the vocabulary.
func (v *Vocab) Encode(s string) ([]int64, error) {
	var out []int64
	add := func(r rune, at int) error {
		t, ok := v.index[r]
		if !ok {
			return fmt.Errorf("symbol %q at byte %d is not in the vocabulary of %d symbols", r, at, len(v.Symbols))
		}
		out = append(out, t)
		return nil
	}
	if v.Bytes {
		out = make([]int64, 0, len(s))
		for i := 0; i < len(s); i++ {
			if err := add(rune(s[i]), i); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	out = make([]int64, 0, utf8.RuneCountInString(s))
	for i, r := range s {
		if err := add(r, i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Decode returns the text of tokens; a token out of range decodes as
// U+FFFD.
func (v *Vocab) Decode(tokens []int64) string {
	var b strings.Builder
	var raw []byte
	for _, t := range tokens {
		r := utf8.RuneError
		if t >= 0 && t < int64(len(v.Symbols)) {
			r = v.Symbols[t]
		}
		if v.Bytes {
			raw = append(raw, byte(r))
		} else {
			b.WriteRune(r)
		}
	}
	if v.Bytes {
		return string(raw)
	}
	return b.String()
}

// vocabJSON is how a checkpoint's metadata holds a vocabulary.
type vocabJSON struct {
	Symbols []int32 `json:"symbols"`
	Bytes   bool    `json:"bytes"`
}

// MarshalText writes v as JSON (the checkpoint keeps it in its
// metadata).
func (v *Vocab) MarshalText() ([]byte, error) {
	return json.Marshal(vocabJSON{Symbols: v.Symbols, Bytes: v.Bytes})
}

// ParseVocab reads a vocabulary MarshalText wrote.
func ParseVocab(s string) (*Vocab, error) {
	var j vocabJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return nil, fmt.Errorf("the vocabulary: %w", err)
	}
	if len(j.Symbols) == 0 || !slices.IsSorted(j.Symbols) {
		return nil, fmt.Errorf("the vocabulary's %d symbols are empty or not sorted", len(j.Symbols))
	}
	return newVocab(j.Symbols, j.Bytes), nil
}

// DebianFortunes is where Debian's fortunes package installs its texts,
// the default corpus.
const DebianFortunes = "/usr/share/games/fortunes"

// ReadCorpus reads the text at path: a file, or a directory, whose
// regular files are read in name order and joined (the fortune
// databases' index files, *.dat, and links are left out). The text must
// be valid UTF-8.
func ReadCorpus(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	var files []string
	if st.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return "", err
		}
		for _, e := range ents {
			if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), ".dat") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		sort.Strings(files)
	} else {
		files = []string{path}
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if !utf8.Valid(data) {
			return "", fmt.Errorf("%s is not valid UTF-8", f)
		}
		b.Write(data)
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("%s: no text", path)
	}
	return b.String(), nil
}

// Dataset is a tokenized corpus split into training and validation
// tokens (the first 90% and the rest, as nanoGPT splits).
type Dataset struct {
	Train, Val []int64
}

// NewDataset splits tokens.
func NewDataset(tokens []int64) Dataset {
	n := len(tokens) * 9 / 10
	return Dataset{Train: tokens[:n], Val: tokens[n:]}
}

// Starts draws b window starts for windows of t+1 tokens of a split of n
// tokens, uniformly from key: peel.RandInt over [0, n-t).
func Starts(key *peel.Tensor, n, b, t int) []int64 {
	if n <= t {
		fail("a split of %d tokens is too short for windows of %d", n, t+1)
	}
	return peel.RandInt(key, 0, int64(n-t), b).Int64s()
}

// Windows returns the inputs x and targets y [len(starts), t] (int64) of
// the windows of toks at starts: x is toks[s:s+t], y toks[s+1:s+t+1].
func Windows(toks []int64, starts []int64, t int) (x, y *peel.Tensor) {
	xs := make([]int64, 0, len(starts)*t)
	ys := make([]int64, 0, len(starts)*t)
	for _, s := range starts {
		xs = append(xs, toks[s:s+int64(t)]...)
		ys = append(ys, toks[s+1:s+int64(t)+1]...)
	}
	return peel.FromInt64s(xs, len(starts), t), peel.FromInt64s(ys, len(starts), t)
}

// Batch draws a batch of b windows of t tokens of toks from key.
func Batch(key *peel.Tensor, toks []int64, b, t int) (x, y *peel.Tensor) {
	return Windows(toks, Starts(key, len(toks), b, t), t)
}
