package importer

import "testing"

func TestCurlGolden(t *testing.T) { checkGolden(t, "curl", Options{}) }
