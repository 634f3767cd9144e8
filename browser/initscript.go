package browser

import "context"

// AddInitScript adds src to the scripts Chrome runs in each new document of
// the page (its frames' too), before the document's own scripts, as
// Page.addScriptToEvaluateOnNewDocument does; remove takes it out again. It
// does not run src in the document the page shows now. pagemux smoke sets a
// storage state's localStorage with it.
func (p *Page) AddInitScript(ctx context.Context, src string) (remove func(), err error) {
	if err := p.Ready(ctx); err != nil {
		return nil, err
	}
	return p.addInitScript(ctx, src)
}
