package node

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
)

// spawner starts every child process from one goroutine locked to one OS
// thread: a child inherits the network namespace of the thread that forks
// it (setns before fork puts it into a node's namespace), and Pdeathsig
// fires when that thread ends, so it must live as long as the children.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd *exec.Cmd
	ns  netns.NsHandle
	res chan error
}

func newSpawner() (*spawner, error) {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: the runtime ends the thread when this returns.
		runtime.LockOSThread()
		defer close(s.done)
		own, err := netns.Get()
		ready <- err
		if err != nil {
			return
		}
		defer own.Close()
		for r := range s.reqs {
			r.res <- startIn(r.cmd, r.ns, own)
		}
	}()
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("spawner: own network namespace: %w", err)
	}
	return s, nil
}

func startIn(cmd *exec.Cmd, ns, own netns.NsHandle) error {
	if err := netns.Set(ns); err != nil {
		return fmt.Errorf("enter network namespace: %w", err)
	}
	defer func() {
		if err := netns.Set(own); err != nil {
			// The next child would start in the wrong namespace.
			panic(fmt.Sprintf("spawner: return to own network namespace: %v", err))
		}
	}()
	return cmd.Start()
}

func (s *spawner) close() {
	close(s.reqs)
	<-s.done
}

// Process is a child process, known by its pid.
type Process struct {
	Name string
	Log  string // file holding its stdout and stderr
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error; valid after Done.
func (p *Process) Err() error { return p.err }

// start starts bin with args in network namespace ns, output appended to
// logPath (stdout to stdout instead, when not nil).
func (s *spawner) start(name, logPath string, ns netns.NsHandle, stdout io.Writer, bin string, args ...string) (*Process, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: log file: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if stdout != nil {
		cmd.Stdout = stdout
	}
	// A process group of its own (Ctrl-C reaches only the harness, which
	// stops children in order); killed with the spawner's thread.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	res := make(chan error, 1)
	select {
	case s.reqs <- spawnReq{cmd: cmd, ns: ns, res: res}:
	case <-s.done:
		out.Close()
		return nil, errors.New("start " + name + ": spawner closed")
	}
	if err := <-res; err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

// Stop sends SIGTERM, and SIGKILL if the process has not exited after grace.
// It returns once the process is gone.
func (p *Process) Stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
