package main

import (
	"context"
	"io"
)

func runDenials(ctx context.Context, args []string, stdout, stderr io.Writer) int { return exitOK }
