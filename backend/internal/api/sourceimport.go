package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/importer"
)

// Import of another tool's test (POST /api/import?format=…): a curl command, HAR, JMeter .jmx,
// Postman collection or OpenAPI document turned into a plan that is answered, not stored (the
// editor opens it unsaved; saving it is a plan create, audited as such).
const (
	sourceImportRoute = "/api/import"
	// maxSourceImportBody bounds the body: importer.MaxInput of text, JSON-escaped in "input".
	maxSourceImportBody = importer.MaxInput * 3 / 2
)

// sourceImportSlots bounds the imports read at once (each may hold some 100 MiB).
var sourceImportSlots = make(chan struct{}, 2)

// importSourceBody is the body of POST /api/import.
type importSourceBody struct {
	Input      string `json:"input"`
	KeepAssets bool   `json:"keep_assets"`
}

func sourceError(field, msg string) *Error {
	e := errf(http.StatusBadRequest, "bad_request", "%s: %s", field, msg)
	e.Fields = map[string]string{field: msg}
	return e
}

func (s *Server) importSource(c *gin.Context) (int, any, error) {
	format := c.Query("format")
	if format != "" && format != "detect" && !slices.Contains(importer.Formats(), format) {
		return 0, nil, sourceError("format", "must be one of "+strings.Join(importer.Formats(), ", ")+" or detect (or left out)")
	}
	ctx := c.Request.Context()
	select {
	case sourceImportSlots <- struct{}{}:
		defer func() { <-sourceImportSlots }()
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return 0, nil, errf(http.StatusRequestEntityTooLarge, "bad_request", "could not read the body (at most %d MiB)", maxSourceImportBody>>20)
	}
	var in importSourceBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || dec.More() {
		return 0, nil, sourceError("body", `must be one JSON object {"input": "the text to import", "keep_assets": false}`)
	}
	raw = nil
	if strings.TrimSpace(in.Input) == "" {
		return 0, nil, sourceError("input", "is required: the text of the curl command, HAR, .jmx, collection or OpenAPI document")
	}
	res, err := importer.Import(format, []byte(in.Input), importer.Options{KeepAssets: in.KeepAssets, Context: ctx})
	var ie *importer.InputError
	if errors.As(err, &ie) {
		return 0, nil, sourceError("input", ie.Error())
	} else if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, res, nil
}
