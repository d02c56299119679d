//go:build tools

package tools

import _ "golang.zx2c4.com/wireguard"
