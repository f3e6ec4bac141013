// Command dplp is the command-line front end of the dplp library.
package main

import (
	"os"

	"github.com/dplp/dplp/cmd/dplp/internal/cli"
)

func main() { os.Exit(cli.Execute()) }
