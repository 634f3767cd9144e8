package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pagemux/pagemux/browser"
)

// formTools lists fill_form, drag and upload_file: the actions on several
// elements or on files.
func (s *Server) formTools() []tool {
	return []tool{
		s.fillForm(),
		s.drag(),
		s.uploadFile(),
	}
}

type formElement struct {
	UID   string `json:"uid" jsonschema:"The uid of the element to fill out"`
	Value string `json:"value" jsonschema:"Value for the element. \"true\" or \"false\" for checkboxes and toggles, \"true\" for radio buttons."`
}

type fillFormArgs struct {
	pageArg
	Elements        []formElement `json:"elements" jsonschema:"Elements from snapshot to fill out."`
	IncludeSnapshot bool          `json:"includeSnapshot,omitempty" jsonschema:"Whether to include a snapshot in the response. Default is false."`
}

func (s *Server) fillForm() tool {
	return newTool("fill_form", `Fill out multiple form elements (inputs, selects, checkboxes, radios) at once. ALWAYS prefer this tool over multiple individual 'fill' or 'click' calls when interacting with forms. It is significantly faster, more reliable, and reduces turn count. Example: Fill username, password, and check "Remember Me" in one call.`, pageScope,
		func(ctx context.Context, c *call, a *fillFormArgs) error {
			if len(a.Elements) == 0 {
				return &argError{"fill_form needs at least one element: give elements as [{\"uid\": \"1_3\", \"value\": \"Ada\"}]"}
			}
			fields := make([]browser.FormField, len(a.Elements))
			for i, el := range a.Elements {
				if el.UID == "" {
					return &argError{fmt.Sprintf("element %d of fill_form has no uid: give each element a uid from take_snapshot and a value", i+1)}
				}
				fields[i] = browser.FormField{UID: el.UID, Value: el.Value}
			}
			err := c.page.Input().FillForm(ctx, fields)
			if d, ok := errors.AsType[*browser.FormDialogError](err); ok {
				c.resp.reportNavigation = true
				msg := fmt.Sprintf("Filling out the element with uid %s opened a dialog.", d.UID)
				if d.Remaining > 0 {
					msg += " The remaining elements were not filled out."
				}
				c.resp.say("%s", msg)
				return nil
			}
			return acted(c, err, a.IncludeSnapshot, "", "Successfully filled out the form")
		})
}

type dragArgs struct {
	pageArg
	FromUID         string `json:"from_uid" jsonschema:"The uid of the element to drag"`
	ToUID           string `json:"to_uid" jsonschema:"The uid of the element to drop into"`
	IncludeSnapshot bool   `json:"includeSnapshot,omitempty" jsonschema:"Whether to include a snapshot in the response. Default is false."`
}

func (s *Server) drag() tool {
	return newTool("drag", "Drag an element onto another element", pageScope,
		func(ctx context.Context, c *call, a *dragArgs) error {
			err := c.page.Input().Drag(ctx, a.FromUID, a.ToUID)
			return acted(c, err, a.IncludeSnapshot, "The element was dragged and it opened a dialog.", "Successfully dragged an element")
		})
}

type uploadArgs struct {
	pageArg
	UID             string   `json:"uid" jsonschema:"The uid of the file input element or an element that will open file chooser on the page from the page content snapshot"`
	FilePaths       []string `json:"filePaths" jsonschema:"One or more files paths to upload. File paths have to be local to the browser instance (not the MCP)."`
	IncludeSnapshot bool     `json:"includeSnapshot,omitempty" jsonschema:"Whether to include a snapshot in the response. Default is false."`
}

func (s *Server) uploadFile() tool {
	return newTool("upload_file", "Upload a file through a provided element.", pageScope,
		func(ctx context.Context, c *call, a *uploadArgs) error {
			if len(a.FilePaths) == 0 {
				return &argError{"upload_file needs at least one path in filePaths"}
			}
			files := make([]string, len(a.FilePaths))
			for i, path := range a.FilePaths {
				full, err := s.uploadPath(ctx, path)
				if err != nil {
					return err
				}
				files[i] = full
			}
			err := c.page.Input().UploadFile(ctx, a.UID, files)
			done := fmt.Sprintf("File uploaded from %s.", strings.Join(a.FilePaths, ", "))
			return acted(c, err, a.IncludeSnapshot, "The element was clicked to upload and it opened a dialog.", done)
		})
}

// uploadPath checks a path to upload: inside the workspace, and a file.
func (s *Server) uploadPath(ctx context.Context, path string) (string, error) {
	full, err := s.files.input(ctx, path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(full)
	switch {
	case err != nil:
		return "", &argError{fmt.Sprintf("cannot read %q: %v", path, err)}
	case fi.IsDir():
		return "", &argError{fmt.Sprintf("%q is a directory; give the path of a file", path)}
	}
	return full, nil
}
