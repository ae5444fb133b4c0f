// Command etcd runs the etcd server from the go.etcd.io/etcd/server/v3 module,
// so the local cluster's etcd is built from the same pinned sources as the rest.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
