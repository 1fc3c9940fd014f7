package cluster

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

// Spawner starts every child process of a bed from one goroutine locked to
// one OS thread. Two reasons: a child inherits the network namespace of the
// thread that forks it, so setns before fork puts it into a node namespace
// without `ip netns exec`; and Pdeathsig fires when that thread ends, so the
// thread must live as long as the children.
type Spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd *exec.Cmd
	ns  netns.NsHandle // -1: the harness's own namespace
	res chan error
}

// NewSpawner starts the spawner's thread.
func NewSpawner() (*Spawner, error) {
	s := &Spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: when the bed closes (all children stopped) the
		// goroutine returns and the runtime ends the thread.
		runtime.LockOSThread()
		defer close(s.done)
		host, err := netns.Get()
		ready <- err
		if err != nil {
			return
		}
		defer host.Close()
		for r := range s.reqs {
			r.res <- startIn(r.cmd, r.ns, host)
		}
	}()
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("spawner: own network namespace: %w", err)
	}
	return s, nil
}

func startIn(cmd *exec.Cmd, ns, host netns.NsHandle) error {
	if ns >= 0 {
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("enter network namespace: %w", err)
		}
		defer func() {
			if err := netns.Set(host); err != nil {
				// A thread stuck in a node namespace would start the next
				// child there; nothing sensible can continue.
				panic(fmt.Sprintf("spawner: return to own network namespace: %v", err))
			}
		}()
	}
	return cmd.Start()
}

// start starts cmd in namespace ns (-1: the harness's).
func (s *Spawner) start(cmd *exec.Cmd, ns netns.NsHandle) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	res := make(chan error, 1)
	select {
	case s.reqs <- spawnReq{cmd: cmd, ns: ns, res: res}:
	case <-s.done:
		return errors.New("spawner closed")
	}
	return <-res
}

// Close ends the spawner's thread, once its children are gone.
func (s *Spawner) Close() {
	close(s.reqs)
	<-s.done
}

// Process is a child process of the bed, known by its pid.
type Process struct {
	Name string
	Log  string // file holding its stdout and stderr
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error; valid after Done.
func (p *Process) Err() error { return p.err }

// ProcessSpec is what StartProcess starts: Bin with Args in network
// namespace NS (-1: the harness's), output appended to Log (stdout to Stdout
// instead, when set). Cloneflags adds namespaces of its own (CLONE_NEWPID),
// Env variables to the harness's environment.
type ProcessSpec struct {
	Name, Log  string
	NS         netns.NsHandle
	Cloneflags uintptr
	Env        []string
	Stdout     io.Writer
	Bin        string
	Args       []string
}

// StartProcess starts the process spec describes.
func (s *Spawner) StartProcess(spec ProcessSpec) (*Process, error) {
	name, logPath := spec.Name, spec.Log
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: log file: %w", name, err)
	}
	cmd := exec.Command(spec.Bin, spec.Args...)
	cmd.Stdout, cmd.Stderr = out, out
	if spec.Stdout != nil {
		cmd.Stdout = spec.Stdout
	}
	// A process group of its own: Ctrl-C on the terminal reaches the harness,
	// which stops children in order, instead of every child at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: spec.Cloneflags}
	if spec.Env != nil {
		cmd.Env = append(os.Environ(), spec.Env...)
	}
	if err := s.start(cmd, spec.NS); err != nil {
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

// StartWithCleanup starts the process spec describes and registers its
// stop (ten seconds' grace) with cleanups.
func (s *Spawner) StartWithCleanup(cleanups *Cleanups, spec ProcessSpec) (*Process, error) {
	p, err := s.StartProcess(spec)
	if err != nil {
		return nil, err
	}
	cleanups.Add("stop "+spec.Name, func() error { p.Stop(10 * time.Second); return nil })
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

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}
