package impl

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint32_t Code; const char *Details; } ol_result_struct;

// The result for calls made while the library is not initialised. It lives
// in the library's data section, so its address never changes.
static ol_result_struct ol_uninitialized_result = {
    18, "liboffload has not been initialized - please call olInit before using this API"};

static uintptr_t ol_uninitialized(void) { return (uintptr_t)&ol_uninitialized_result; }

// One allocation holds the struct and its text; it is never freed.
// The text is a Go string, read only during the call.
static uintptr_t ol_new_result(uint32_t code, _GoString_ s) {
  const char *text = _GoStringPtr(s);
  size_t n = _GoStringLen(s);
  ol_result_struct *r = calloc(1, sizeof *r + n + 1);
  if (r == NULL) return 0;
  char *d = (char *)(r + 1);
  memcpy(d, text, n);
  r->Code = code;
  r->Details = d;
  return (uintptr_t)r;
}

static uint32_t ol_result_code(uintptr_t r) { return ((const ol_result_struct *)r)->Code; }
static const char *ol_result_details(uintptr_t r) { return ((const ol_result_struct *)r)->Details; }
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-multierror"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
)

// MaxDistinctResults bounds the interned error table. Past it, a new
// (code, details) pair is answered with one shared result per code.
const MaxDistinctResults = 4096

type resultKey struct {
	code    ol.Errc
	details string
}

// results interns every ol_result_t the library returns. Results are C
// memory that is never freed: callers may keep them for the life of the
// process, across olShutDown and re-initialisation.
var results struct {
	mu       sync.Mutex
	byKey    sync.Map // resultKey -> uintptr
	count    int
	fallback [ol.ErrcLast]uintptr
}

// uninitialized is the static result for calls made before olInit.
func uninitialized() uintptr {
	r := uintptr(C.ol_uninitialized())
	if _, ok := results.byKey.Load(resultKey{ol.ErrcUninitialized, uninitializedText}); !ok {
		func() {
			results.mu.Lock()
			defer results.mu.Unlock()
			fault.Point()
			results.byKey.LoadOrStore(resultKey{ol.ErrcUninitialized, uninitializedText}, r)
		}()
	}
	return r
}

const uninitializedText = "liboffload has not been initialized - please call olInit before using this API"

// intern returns the immortal result for (code, details).
func intern(code ol.Errc, details string) uintptr {
	if code == ol.ErrcSuccess {
		code = ol.ErrcUnknown
	}
	k := resultKey{code, details}
	if v, ok := results.byKey.Load(k); ok {
		return v.(uintptr)
	}
	if k.code == ol.ErrcUninitialized && details == uninitializedText {
		return uninitialized()
	}
	results.mu.Lock()
	defer results.mu.Unlock()
	fault.Point()
	if v, ok := results.byKey.Load(k); ok {
		return v.(uintptr)
	}
	if results.count >= MaxDistinctResults {
		return fallbackResult(code)
	}
	r := newCResult(code, details)
	if r == 0 {
		return fallbackResult(code)
	}
	results.byKey.Store(k, r)
	results.count++
	return r
}

// fallbackResult is the one result per code used once the table is full
// (or C memory ran out). Called with results.mu held.
func fallbackResult(code ol.Errc) uintptr {
	if code >= ol.ErrcLast {
		code = ol.ErrcUnknown
	}
	if results.fallback[code] == 0 {
		text := fmt.Sprintf("%s (more than %d distinct error messages were produced; the details of this one were dropped)", code, MaxDistinctResults)
		results.fallback[code] = newCResult(code, text)
	}
	return results.fallback[code]
}

func newCResult(code ol.Errc, details string) uintptr {
	return uintptr(C.ol_new_result(C.uint32_t(code), details))
}

// staticResult is a validation failure whose result is interned on first use.
type staticResult struct {
	code    ol.Errc
	details string
	p       atomic.Uintptr
}

func (s *staticResult) get() uintptr {
	if r := s.p.Load(); r != 0 {
		return r
	}
	r := intern(s.code, s.details)
	s.p.Store(r)
	return r
}

// ResultCode reads the code of a result (0 for success).
func ResultCode(r uintptr) ol.Errc {
	if r == 0 {
		return ol.ErrcSuccess
	}
	return ol.Errc(C.ol_result_code(C.uintptr_t(r)))
}

// ResultDetails reads the Details text of a result ("" for success).
func ResultDetails(r uintptr) string {
	if r == 0 {
		return ""
	}
	return C.GoString(C.ol_result_details(C.uintptr_t(r)))
}

// result converts an implementation error into an ol_result_t.
func (c *Context) result(err error) uintptr {
	if err == nil {
		return 0
	}
	code, details := describe(err)
	return intern(code, details)
}

// describe gives the code and Details of any error: *ol.Error as is, a
// joined error as the first failure's code with every message, anything
// else as OL_ERRC_UNKNOWN.
func describe(err error) (ol.Errc, string) {
	var me *multierror.Error
	if errors.As(err, &me) && len(me.Errors) > 0 {
		code, _ := describe(me.Errors[0])
		var parts []string
		for _, e := range me.Errors {
			_, d := describe(e)
			parts = append(parts, d)
		}
		return code, strings.Join(parts, "; ")
	}
	var oe *ol.Error
	if errors.As(err, &oe) {
		return oe.Code, oe.Details
	}
	return ol.ErrcUnknown, err.Error()
}

// Recover turns a panic in an entry point into an OL_ERRC_UNKNOWN result.
// It must be deferred directly by the exported function.
func Recover(fn string, res *uintptr) {
	if r := recover(); r != nil {
		*res = intern(ol.ErrcUnknown, fmt.Sprintf("internal error in %s: %v", fn, r))
	}
}
