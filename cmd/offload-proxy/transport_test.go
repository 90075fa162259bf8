package main

import "testing"

type mapEnv map[string]string

func (m mapEnv) Lookup(k string) (string, bool) { v, ok := m[k]; return v, ok }

// TestMPIDefaultKeepsTheLaunchsSetting: the proxy turns Open MPI's yield
// in idle polls off, unless the launch chose a value itself (even 1).
func TestMPIDefaultKeepsTheLaunchsSetting(t *testing.T) {
	name, value, set := mpiDefault(mapEnv{})
	if !set || name != "OMPI_MCA_mpi_yield_when_idle" || value != "0" {
		t.Errorf("with nothing set: %q=%q (set %v), want OMPI_MCA_mpi_yield_when_idle=0", name, value, set)
	}
	if _, _, set := mpiDefault(mapEnv{"OMPI_MCA_mpi_yield_when_idle": "1"}); set {
		t.Errorf("the launch's OMPI_MCA_mpi_yield_when_idle=1 was overridden")
	}
}
