package ruleset

import (
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// SourceNotLocal matches packets whose source address is not one of the
// node's own: on the output hook, what the node forwards on someone else's
// behalf (IPVS sends the packets it balances out through output, with the
// client's source) rather than what its own processes send.
type SourceNotLocal struct{}

func (SourceNotLocal) text() string { return "fib saddr type != local" }
func (SourceNotLocal) compile(c *compiler) {
	c.add(&expr.Fib{Register: 1, FlagSADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)})
}
