package nft

import (
	"fmt"

	"github.com/google/nftables"

	"github.com/nfrouter/nfrouter/nft/internal/nftconn"
)

// Cleanup deletes nfrouter's table (every part: firewall, service proxy,
// pod egress) from the network namespace netnsFd (0: the caller's) and
// returns what it removed: nothing when the table is not there. Other tables
// are not touched.
func Cleanup(netnsFd int) ([]string, error) {
	conn, err := nftconn.Open(netnsFd)
	if err != nil {
		return nil, fmt.Errorf("open nftables netlink: %w", err)
	}
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, fmt.Errorf("list nftables tables: %w", err)
	}
	for _, t := range tables {
		if t.Name != TableName {
			continue
		}
		conn.DelTable(t)
		if err := conn.Flush(); err != nil {
			return nil, fmt.Errorf("delete nftables table %s %s: %w", TableFamily, TableName, err)
		}
		return []string{fmt.Sprintf("nftables table %s %s", TableFamily, TableName)}, nil
	}
	return nil, nil
}
