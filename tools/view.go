package tools

import "github.com/pagemux/pagemux/browser"

// PageView is one open page as the live view (ui/) shows it to an admin.
type PageView struct {
	ID int `json:"id"`
	// URL and Title are the page's, every secret masked.
	URL   string `json:"url"`
	Title string `json:"title"`
	// Owner is the agents.Agent.ID of the agent that owns the page, ""
	// for no one's (stdio, shared mode before anyone opened it).
	Owner string `json:"owner,omitempty"`
	// Page is the tab itself, for thumbnails (browser.Page.Thumbnails).
	Page *browser.Page `json:"-"`
}

// PagesView lists the open pages with their owners, lowest id first. It
// checks no agent's rights: it is for whoever may see every agent (an admin
// token, the loopback --ui), and takes no lock.
func (s *Server) PagesView() []PageView {
	pages := s.browser.Pages()
	out := make([]PageView, 0, len(pages))
	for _, p := range pages {
		v := PageView{ID: p.ID, URL: s.masker.Mask(p.URL()), Title: s.masker.Mask(p.Title()), Page: p}
		if s.agents != nil {
			v.Owner, _ = s.agents.Owner(p.ID)
		}
		out = append(out, v)
	}
	return out
}
