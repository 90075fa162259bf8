module github.com/liboffload-go/liboffload-go

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3
	github.com/hashicorp/go-multierror v1.1.1
	go.uber.org/goleak v1.3.0
)

require github.com/hashicorp/errwrap v1.0.0 // indirect
