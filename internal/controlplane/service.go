package controlplane

import (
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
)

// Service is the control plane as the command line runs it
// (cpconfig.Service): cmd/st-control-plane gives one to internal/cli, and
// st, which links none of this package, has none.
type Service struct {
	// NewMeter makes the meter of a control plane Start starts when its
	// options name none (cpserver.NewMeter in st-control-plane); nil
	// counts nothing.
	NewMeter func() cpconfig.Meter
}

var _ cpconfig.Service = Service{}

// Start starts a control plane listening on listen (StartControlPlane).
func (s Service) Start(opt cpconfig.ServerOptions, listen string) (cpconfig.Server, error) {
	if opt.Meter == nil && s.NewMeter != nil {
		opt.Meter = s.NewMeter()
	}
	cp, err := StartControlPlane(opt, listen)
	if err != nil {
		return nil, err // not a nil *ControlPlane in a non-nil interface
	}
	return cp, nil
}

// AddAccount is the package's AddAccount.
func (Service) AddAccount(data, name string) (string, error) { return AddAccount(data, name) }

// ListMachines is the package's ListMachines.
func (Service) ListMachines(data, account string) ([]remote.Machine, error) {
	return ListMachines(data, account)
}

// RemoveMachine is the package's RemoveMachine.
func (Service) RemoveMachine(data, account, name string) (remote.Machine, error) {
	return RemoveMachine(data, account, name)
}
