package netpol

import (
	"fmt"
	"slices"
)

func sortKeys[K comparable](keys []K) {
	slices.SortFunc(keys, func(a, b K) int {
		x, y := fmt.Sprint(a), fmt.Sprint(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
}
