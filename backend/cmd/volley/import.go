package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/importer"
)

// Exit statuses of volley import.
const (
	exitImportSkipped    = 4 // the plan was printed, but some elements were not imported
	exitImportUnreadable = 2 // the input could not be read (or the arguments are wrong)
)

func importCmd() *cobra.Command {
	var keepAssets bool
	c := &cobra.Command{
		Use:   "import FORMAT FILE|-",
		Short: "Turn a curl command, HAR recording, JMeter .jmx, Postman collection or OpenAPI document into a plan",
		Long: `Read a test written for another tool and print a Volley plan (JSON) on stdout; what could not be
imported is listed on stderr, one "skipped: ELEMENT: REASON" line each, and remarks on what was
imported (credentials to add, a suggested extraction) one "note: ELEMENT: REASON" line each. FORMAT is one of
` + strings.Join(importer.Formats(), ", ") + ` or "detect"; FILE "-" reads stdin. Input is read up to
64 MiB. See docs/import/.

Exit status: 0 everything was imported; 4 the plan was printed but something was skipped
(notes alone exit 0);
2 the input could not be read (unknown format, unreadable file, malformed input).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return importMain(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], args[1], importer.Options{KeepAssets: keepAssets})
		},
	}
	c.Flags().BoolVar(&keepAssets, "keep-assets", false, "HAR: keep the requests of static assets (images, fonts, CSS, JS)")
	return c
}

func importMain(stdin io.Reader, stdout, stderr io.Writer, format, file string, o importer.Options) error {
	bad := func(f string, a ...any) error {
		fmt.Fprintf(stderr, "volley import: "+f+"\n", a...)
		return exitCode(exitImportUnreadable)
	}
	var in io.Reader = stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return bad("%v", err)
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, importer.MaxInput+1))
	if err != nil {
		return bad("reading %s: %v", file, err)
	}
	res, err := importer.Import(format, data, o)
	var ie *importer.InputError
	if errors.As(err, &ie) {
		return bad("%v", err)
	} else if err != nil {
		return err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res.Plan); err != nil {
		return err
	}
	if _, err := stdout.Write(b.Bytes()); err != nil {
		return err
	}
	for _, s := range res.Skipped {
		kind := "skipped"
		if s.Note {
			kind = "note"
		}
		fmt.Fprintf(stderr, "%s: %s: %s\n", kind, s.Element, s.Reason)
	}
	if n := importer.SkippedCount(res.Skipped); n > 0 {
		fmt.Fprintf(stderr, "volley import: %s: %d element(s) not imported\n", res.Format, n)
		return exitCode(exitImportSkipped)
	}
	return nil
}
