package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sophonz/st/internal/testutil/fakemodel"
)

func main() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	fmt.Println(ln.Addr().String())
	os.WriteFile(os.Args[1], []byte("http://"+ln.Addr().String()), 0o644)
	s := fakemodel.New()
	go func() {
		http.ListenAndServe("127.0.0.1:0", nil)
	}()
	go func() {
		// dump the log on SIGUSR? simply every 2s
		for {
			b, _ := json.Marshal(s.Requests())
			os.WriteFile(os.Args[1]+".log", b, 0o644)
			time.Sleep(time.Second)
		}
	}()
	s.Serve(ln)
}
