package data

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/peel-ml/peel"
)

// CSVOptions configure ReadCSV. The zero value reads every column of
// comma-separated float64 values with no header.
type CSVOptions struct {
	// Comma is the field delimiter (',' when 0), as encoding/csv's.
	Comma rune
	// Comment, when not 0, starts a comment line (encoding/csv's).
	Comment rune
	// SkipRows is the number of leading rows (a header) to skip; they
	// are parsed as CSV but not as numbers.
	SkipRows int
	// Columns selects the columns to keep, in order (repeats allowed);
	// nil keeps every column.
	Columns []int
	// DType is Float64 (the default, for the zero value) or Float32.
	DType peel.DType
}

// ReadCSV reads numeric CSV data from r into a [rows, columns] tensor:
// every row (after SkipRows) must have the same number of fields, and
// every selected field must parse as a number (strconv.ParseFloat, after
// trimming spaces; quoted fields such as "1.5" are unquoted by the CSV
// reader first; NaN, Inf and exponents are accepted). Empty input (or
// only skipped rows) gives a [0, columns] tensor, columns the number of
// selected columns (0 without Columns). It returns an error naming the
// line and column for malformed CSV, a field that is not a number, a
// row of another length, or a selected column out of range, and for
// invalid options.
func ReadCSV(r io.Reader, opts CSVOptions) (*peel.Tensor, error) {
	dt := opts.DType
	switch dt {
	case 0:
		dt = peel.Float64
	case peel.Float32, peel.Float64:
	default:
		return nil, fmt.Errorf("data.ReadCSV: dtype %v is not Float32 or Float64", dt)
	}
	if opts.SkipRows < 0 {
		return nil, fmt.Errorf("data.ReadCSV: negative SkipRows %d", opts.SkipRows)
	}
	for _, c := range opts.Columns {
		if c < 0 {
			return nil, fmt.Errorf("data.ReadCSV: negative column %d", c)
		}
	}
	cr := csv.NewReader(r)
	if opts.Comma != 0 {
		cr.Comma = opts.Comma
	}
	cr.Comment = opts.Comment
	cr.FieldsPerRecord = -1 // checked below, after the skipped rows
	cr.ReuseRecord = true
	var vals []float64
	rows, width := 0, -1
	for rec := 0; ; rec++ {
		fields, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("data.ReadCSV: %w", err)
		}
		if rec < opts.SkipRows {
			continue
		}
		line, _ := cr.FieldPos(0)
		if width < 0 {
			width = len(fields)
			for _, c := range opts.Columns {
				if c >= width {
					return nil, fmt.Errorf("data.ReadCSV: line %d: column %d is out of range for %d fields", line, c, width)
				}
			}
		} else if len(fields) != width {
			return nil, fmt.Errorf("data.ReadCSV: line %d: %d fields, want %d", line, len(fields), width)
		}
		parse := func(c int) error {
			v, err := strconv.ParseFloat(strings.TrimSpace(fields[c]), 64)
			if err != nil {
				l, col := cr.FieldPos(c)
				return fmt.Errorf("data.ReadCSV: line %d, column %d (field %d): %q is not a number", l, col, c, fields[c])
			}
			vals = append(vals, v)
			return nil
		}
		if opts.Columns == nil {
			for c := range fields {
				if err := parse(c); err != nil {
					return nil, err
				}
			}
		} else {
			for _, c := range opts.Columns {
				if err := parse(c); err != nil {
					return nil, err
				}
			}
		}
		rows++
	}
	cols := len(opts.Columns)
	if opts.Columns == nil {
		cols = max(width, 0)
	}
	var t *peel.Tensor
	if err := peel.Catch(func() { t = peel.FromFloat64s(vals, rows, cols) }); err != nil {
		return nil, fmt.Errorf("data.ReadCSV: %w", err)
	}
	if dt == peel.Float32 {
		t = peel.AsType(t, peel.Float32)
	}
	return t, nil
}

// LoadCSV reads the numeric CSV file at path as ReadCSV reads a reader,
// transparently decompressing a gzipped file (recognized by its magic
// bytes, whatever its name), as np.loadtxt does: one call in place of
// opening, wrapping and closing. It returns ReadCSV's errors, and the
// file's, each naming path.
func LoadCSV(path string, opts CSVOptions) (*peel.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data.LoadCSV: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("data.LoadCSV: %s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	t, err := ReadCSV(r, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
