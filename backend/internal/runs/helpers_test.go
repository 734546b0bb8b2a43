package runs_test

import "fmt"

// planJSON is a constant-vus plan of one request to url.
func planJSON(url string, vus int, dur string) string {
	return fmt.Sprintf(`{"name":"runs test","requests":[{"name":"home","url":%q}],"load":{"executor":"constant-vus","vus":%d,"duration":%q},"http":{"timeout":"2s"}}`, url, vus, dur)
}
