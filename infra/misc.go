package infra

import (
	"crypto/rand"
	"encoding/hex"
)

func randTag() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
