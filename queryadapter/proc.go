package queryadapter

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync"
	"time"
)

// The programs run through os.StartProcess, not os/exec: os/exec alone
// adds about 270 KB to the binary (measured with go1.26 -trimpath), and
// a query needs only argv, a directory, a stdin buffer and capped outputs.

// proc is one finished program run.
type proc struct {
	out, errOut []byte
	code        int  // exit status; -1 when killed
	capped      bool // stdout passed the cap (the program was killed)
}

// runProc runs bin with argv in dir, stdin as its input, killing it when
// ctx ends or its output passes maxOut bytes.
func runProc(ctx context.Context, bin string, argv []string, dir string, stdin []byte, maxOut, maxErr int) (proc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return proc{}, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return proc{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return proc{}, err
	}
	p, err := os.StartProcess(bin, argv, &os.ProcAttr{Dir: dir, Env: os.Environ(), Files: []*os.File{inR, outW, errW}})
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return proc{}, err
	}
	var res proc
	var wg sync.WaitGroup
	var mu sync.Mutex
	kill := func() { _ = p.Kill() }
	wg.Add(3)
	go func() {
		defer wg.Done()
		_, _ = inW.Write(stdin) // a program may stop reading early (EPIPE)
		inW.Close()
	}()
	go func() {
		defer wg.Done()
		b, hit := readCapped(outR, maxOut)
		mu.Lock()
		res.out, res.capped = b, hit
		mu.Unlock()
		if hit {
			kill()
		}
	}()
	go func() {
		defer wg.Done()
		b, _ := readCapped(errR, maxErr)
		mu.Lock()
		res.errOut = b
		mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, kill)
	st, werr := p.Wait()
	stop()
	// A program that left a child holding the pipes must not hang us.
	_ = outR.SetReadDeadline(time.Now().Add(time.Second))
	_ = errR.SetReadDeadline(time.Now().Add(time.Second))
	wg.Wait()
	outR.Close()
	errR.Close()
	if werr != nil {
		return proc{}, werr
	}
	res.code = st.ExitCode()
	return res, nil
}

// readCapped reads r to its end, keeping at most max bytes; hit reports
// more.
func readCapped(r io.Reader, max int) ([]byte, bool) {
	var b bytes.Buffer
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if b.Len()+n > max {
				b.Write(buf[:max-b.Len()])
				return b.Bytes(), true
			}
			b.Write(buf[:n])
		}
		if err != nil {
			return b.Bytes(), false
		}
	}
}
