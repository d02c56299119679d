//go:build tools

package tools

import _ "github.com/projectcapsule/capsule/cmd"
