// Command kubectl-rollgate is the kubectl plugin of rollgate: kubectl rollgate get, why, approve,
// reject, retry, reset, suspend, resume, history and version.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/rollgate/rollgate/internal/cli"
)

func main() {
	if err := cli.NewCommand(os.Stdout).ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
