//go:build tools

package tools

import _ "github.com/ory/hydra/v2"
