package api

// OfferRequest offers an agent here to another machine's coordinator, or
// withdraws the offer.
type OfferRequest struct {
	Pane     string `json:"pane"` // who asks (a person's pane, or none)
	ID       string `json:"id"`   // the agent's pane
	Machine  string `json:"machine,omitempty"`
	Withdraw bool   `json:"withdraw,omitempty"`
}

// OfferView is what st worker offer prints.
type OfferView struct {
	Pane        string `json:"pane"`
	Agent       string `json:"agent"`
	Machine     string `json:"machine,omitempty"` // the slug it is offered to
	MachineName string `json:"machine_name,omitempty"`
	Withdrawn   bool   `json:"withdrawn,omitempty"`
}
