package e2e

import (
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Status of one case in the results table.
type Status string

const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Skipped Status = "skipped"
)

// Result is one in-scope case of a run.
type Result struct {
	Name   string
	Status Status
	// Cause is why a case failed or was skipped: the first line of the
	// failure, the test's own skip reason, or the skip pattern that left it
	// out. Empty for passed cases.
	Cause    string
	Duration time.Duration
}

// junitSuites is the part of e2e.test's junit_01.xml (ginkgo's JUnit
// reporter) that the table needs.
type junitSuites struct {
	Suites []struct {
		Cases []struct {
			Name    string  `xml:"name,attr"`
			Status  string  `xml:"status,attr"`
			Time    float64 `xml:"time,attr"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			Failure *struct {
				Message     string `xml:"message,attr"`
				Description string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message     string `xml:"message,attr"`
				Type        string `xml:"type,attr"`
				Description string `xml:",chardata"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// ParseJUnit reads e2e.test's JUnit report and returns the cases that focus
// selects. The report lists every spec of the binary, those the focus left
// out as plainly "skipped"; cases that focus selects but skip removed are
// reported as skipped with skip as the cause. Suite nodes ("[BeforeSuite]",
// "[ReportAfterSuite] …") are left out unless they failed, since a failed
// one explains the cases that did not run.
func ParseJUnit(r io.Reader, focus, skip *regexp.Regexp) ([]Result, error) {
	var doc junitSuites
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("junit report: %w", err)
	}
	var results []Result
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			name, node := specName(c.Name)
			res := Result{Name: name, Duration: time.Duration(c.Time * float64(time.Second))}
			switch {
			case c.Failure != nil:
				res.Status, res.Cause = Failed, firstLine(c.Failure.Message, c.Failure.Description)
			case c.Error != nil:
				res.Status, res.Cause = Failed, c.Error.Type+": "+firstLine(c.Error.Message, c.Error.Description)
			case c.Status == "passed":
				res.Status = Passed
			default:
				res.Status = Skipped
				if c.Skipped != nil {
					res.Cause = strings.TrimPrefix(strings.TrimPrefix(c.Skipped.Message, "skipped"), " - ")
				}
			}
			if node != "It" && res.Status != Failed {
				continue
			}
			if node == "It" && !focus.MatchString(name) {
				continue
			}
			if res.Status == Skipped && res.Cause == "" {
				if skip != nil && skip.MatchString(name) {
					res.Cause = "left out: matches " + skip.String()
				} else {
					res.Cause = "not run"
				}
			}
			results = append(results, res)
		}
	}
	slices.SortStableFunc(results, func(a, b Result) int { return strings.Compare(a.Name, b.Name) })
	return results, nil
}

// specName splits ginkgo's "[It] full text" (or "[BeforeSuite]") into the
// text and the node type.
func specName(s string) (name, node string) {
	if strings.HasPrefix(s, "[") {
		if i := strings.Index(s, "]"); i > 0 {
			return strings.TrimSpace(s[i+1:]), s[1:i]
		}
	}
	return s, "It"
}

// firstLine is the first meaningful line of a failure: ginkgo writes
// "[FAILED] message" into the description when the message attribute is
// omitted, as e2e.test's reporter does.
func firstLine(msg, desc string) string {
	for _, text := range []string{msg, desc} {
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "[FAILED]"))
			if line != "" {
				const max = 200
				if len(line) > max {
					line = line[:max] + "…"
				}
				return line
			}
		}
	}
	return "failed without a message"
}

// Counts are the number of results by status.
func Counts(results []Result) map[Status]int {
	n := map[Status]int{}
	for _, r := range results {
		n[r.Status]++
	}
	return n
}

// WriteTable writes results as a Markdown table (case, result, cause),
// failures first, then skips, then passes, preceded by a one-line summary.
func WriteTable(w io.Writer, title string, results []Result) error {
	n := Counts(results)
	if _, err := fmt.Fprintf(w, "%s: %d cases, %d passed, %d failed, %d skipped\n\n| Case | Result | Cause |\n|---|---|---|\n",
		title, len(results), n[Passed], n[Failed], n[Skipped]); err != nil {
		return err
	}
	order := map[Status]int{Failed: 0, Skipped: 1, Passed: 2}
	sorted := slices.Clone(results)
	slices.SortStableFunc(sorted, func(a, b Result) int { return order[a.Status] - order[b.Status] })
	cell := strings.NewReplacer("|", `\|`, "\n", " ")
	for _, r := range sorted {
		d := ""
		if r.Status != Skipped {
			d = fmt.Sprintf(" (%s)", r.Duration.Round(time.Second))
		}
		if _, err := fmt.Fprintf(w, "| %s | %s%s | %s |\n", cell.Replace(r.Name), r.Status, d, cell.Replace(r.Cause)); err != nil {
			return err
		}
	}
	return nil
}
