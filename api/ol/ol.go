// Package ol holds the Go names of the Offload API's enums and structs
// (generated into zenums.go) and the error type every layer returns.
package ol

import "fmt"

// ValueKind is the shape of the value an info property returns.
type ValueKind uint8

// Value kinds of info properties.
const (
	ValueNone       ValueKind = iota
	ValueString               // NUL-terminated char array; size includes the NUL
	ValueU32                  // uint32_t or a 32-bit flags typedef
	ValueU64                  // uint64_t or size_t
	ValueBool                 // bool, one byte
	ValueHandle               // an ol_*_handle_t
	ValuePointer              // void *
	ValueDimensions           // ol_dimensions_t, 12 bytes
	ValueEnum                 // a 32-bit enum
)

// Size is the number of bytes a value of this kind takes (strings: 0, their
// size depends on the text).
func (k ValueKind) Size() uint64 {
	switch k {
	case ValueU32, ValueEnum:
		return 4
	case ValueU64, ValueHandle, ValuePointer:
		return 8
	case ValueBool:
		return 1
	case ValueDimensions:
		return 12
	}
	return 0
}

// Error is a failure with an API error code and a text that says what was
// wrong. It is what implementation and plugin code return.
type Error struct {
	Code    Errc
	Details string
}

func (e *Error) Error() string { return e.Code.String() + ": " + e.Details }

// Errorf makes an *Error with a formatted Details text.
func Errorf(code Errc, format string, args ...any) *Error {
	return &Error{Code: code, Details: fmt.Sprintf(format, args...)}
}

// NewError makes an *Error with a fixed Details text.
func NewError(code Errc, details string) *Error { return &Error{Code: code, Details: details} }
