package nft

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// kernelObject is one object of a table as the kernel dumps it: every
// attribute as a line "path = hex", nested attributes flattened.
type kernelObject struct {
	kind  string // "table", "chain", "set", "elements", "rule"
	name  string // the chain, set or rule ("chain#index")
	attrs []string
}

func (o kernelObject) key() string { return o.kind + " " + o.name }

// kernelObjects dumps table family/name in namespace ns over raw netlink:
// the table, its chains, sets, the elements of each set (as one object per
// set, sorted, since the kernel lists hashed elements in no fixed order) and
// its rules, keyed by kernelObject.key. It reads the kernel's attributes
// rather than a library's view of them, so that nothing is lost or
// normalized on the way.
func kernelObjects(t testing.TB, ns netns.NsHandle, family byte, name string) map[string]kernelObject {
	t.Helper()
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: int(ns)})
	if err != nil {
		t.Fatalf("dump table %s: dial: %v", name, err)
	}
	defer c.Close()
	dump := func(msgType int, attrs ...netlink.Attribute) [][]byte {
		t.Helper()
		data := []byte{family, unix.NFNETLINK_V0, 0, 0}
		if len(attrs) > 0 {
			b, err := netlink.MarshalAttributes(attrs)
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, b...)
		}
		msgs, err := c.Execute(netlink.Message{
			Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | msgType), Flags: netlink.Request | netlink.Dump},
			Data:   data,
		})
		if err != nil {
			t.Fatalf("dump table %s: message type %d: %v", name, msgType, err)
		}
		var out [][]byte
		for _, m := range msgs {
			if len(m.Data) >= 4 {
				out = append(out, m.Data[4:])
			}
		}
		return out
	}
	tableAttr := func(typ uint16) netlink.Attribute {
		return netlink.Attribute{Type: typ, Data: append([]byte(name), 0)}
	}
	objs := map[string]kernelObject{}
	put := func(o kernelObject) { objs[o.key()] = o }
	for _, m := range dump(unix.NFT_MSG_GETTABLE) {
		if attrString(m, unix.NFTA_TABLE_NAME) == name {
			put(kernelObject{kind: "table", name: name, attrs: flatten(m, tableAttrNames)})
		}
	}
	for _, m := range dump(unix.NFT_MSG_GETCHAIN, tableAttr(unix.NFTA_CHAIN_TABLE)) {
		if attrString(m, unix.NFTA_CHAIN_TABLE) == name {
			put(kernelObject{kind: "chain", name: attrString(m, unix.NFTA_CHAIN_NAME), attrs: flatten(m, chainAttrNames)})
		}
	}
	for _, m := range dump(unix.NFT_MSG_GETSET, tableAttr(unix.NFTA_SET_TABLE)) {
		if attrString(m, unix.NFTA_SET_TABLE) != name {
			continue
		}
		set := attrString(m, unix.NFTA_SET_NAME)
		put(kernelObject{kind: "set", name: set, attrs: flatten(m, setAttrNames)})
		var els []string
		for _, em := range dump(unix.NFT_MSG_GETSETELEM, tableAttr(unix.NFTA_SET_ELEM_LIST_TABLE),
			netlink.Attribute{Type: unix.NFTA_SET_ELEM_LIST_SET, Data: append([]byte(set), 0)}) {
			for _, a := range parseAttrs(em) {
				if a.typ != unix.NFTA_SET_ELEM_LIST_ELEMENTS {
					continue
				}
				for _, e := range parseAttrs(a.data) {
					els = append(els, strings.Join(flatten(e.data, elemAttrNames), ", "))
				}
			}
		}
		slices.Sort(els)
		put(kernelObject{kind: "elements", name: set, attrs: els})
	}
	index := map[string]int{}
	for _, m := range dump(unix.NFT_MSG_GETRULE, tableAttr(unix.NFTA_RULE_TABLE)) {
		if attrString(m, unix.NFTA_RULE_TABLE) != name {
			continue
		}
		chain := attrString(m, unix.NFTA_RULE_CHAIN)
		put(kernelObject{kind: "rule", name: fmt.Sprintf("%s#%d", chain, index[chain]), attrs: flatten(m, ruleAttrNames)})
		index[chain]++
	}
	return objs
}

type rawAttr struct {
	typ    uint16
	nested bool
	data   []byte
}

// parseAttrs splits b into netlink attributes; NLA_F_NESTED, which the
// kernel sets on every nest it writes, tells which hold attributes.
func parseAttrs(b []byte) []rawAttr {
	var out []rawAttr
	for len(b) >= 4 {
		n := int(binary.NativeEndian.Uint16(b))
		if n < 4 || n > len(b) {
			break
		}
		typ := binary.NativeEndian.Uint16(b[2:])
		out = append(out, rawAttr{typ: typ &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER), nested: typ&unix.NLA_F_NESTED != 0, data: b[4:n]})
		b = b[min((n+3)&^3, len(b)):]
	}
	return out
}

func attrString(b []byte, typ uint16) string {
	for _, a := range parseAttrs(b) {
		if a.typ == typ {
			return string(trimNUL(a.data))
		}
	}
	return ""
}

// flatten writes the attributes of b as "path = hex" lines. names names
// the top-level attributes; nested ones are numbered, and an expression is
// named by its NFTA_EXPR_NAME.
func flatten(b []byte, names map[uint16]string) []string {
	var out []string
	var walk func(prefix string, b []byte, names map[uint16]string)
	walk = func(prefix string, b []byte, names map[uint16]string) {
		list := strings.HasSuffix(prefix, "expressions/")
		for i, a := range parseAttrs(b) {
			name, ok := names[a.typ]
			if !ok {
				name = fmt.Sprint(a.typ)
			}
			if list {
				// NFTA_LIST_ELEM: number it and name its expression.
				name = fmt.Sprintf("%d:%s", i, attrString(a.data, unix.NFTA_EXPR_NAME))
			}
			path := prefix + name
			if !a.nested && !looksNested(a.data) {
				out = append(out, path+" = "+hex.EncodeToString(a.data))
				continue
			}
			walk(path+"/", a.data, nil)
		}
	}
	walk("", b, names)
	return out
}

// looksNested reports whether b parses as attributes to its last byte: the
// kernel leaves NLA_F_NESTED off some nests (a rule's expressions and
// their data). A value that happens to parse is printed as attributes
// too, the same way on both sides, so comparisons stay exact.
func looksNested(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	for len(b) > 0 {
		if len(b) < 4 {
			return false
		}
		n := int(binary.NativeEndian.Uint16(b))
		if n < 4 || n > len(b) {
			return false
		}
		b = b[min((n+3)&^3, len(b)):]
	}
	return true
}

// Attribute names (include/uapi/linux/netfilter/nf_tables.h).
var (
	tableAttrNames = map[uint16]string{1: "name", 2: "flags", 3: "use", 4: "handle", 6: "userdata", 7: "owner"}
	chainAttrNames = map[uint16]string{1: "table", 2: "handle", 3: "name", 4: "hook", 5: "policy", 6: "use",
		7: "type", 8: "counters", 10: "flags", 11: "id", 12: "userdata"}
	setAttrNames = map[uint16]string{1: "table", 2: "name", 3: "flags", 4: "key-type", 5: "key-len", 6: "data-type",
		7: "data-len", 8: "policy", 9: "desc", 10: "id", 11: "timeout", 12: "gc-interval", 13: "userdata",
		15: "obj-type", 16: "handle", 17: "expr", 18: "expressions"}
	elemAttrNames = map[uint16]string{1: "key", 2: "data", 3: "flags", 4: "timeout", 5: "expiration",
		6: "userdata", 7: "expr", 9: "objref", 10: "key-end", 11: "expressions"}
	ruleAttrNames = map[uint16]string{1: "table", 2: "chain", 3: "handle", 4: "expressions", 5: "compat",
		6: "position", 7: "userdata", 9: "id", 10: "position-id", 11: "chain-id"}
)
