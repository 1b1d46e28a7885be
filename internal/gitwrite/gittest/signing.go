package gittest

import (
	"bytes"
	"io"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
)

// SigningKey makes an OpenPGP key and returns its private half armored, encrypted with passphrase
// ("" for none), and its public half armored, to verify signatures with.
func SigningKey(t testing.TB, passphrase string) (private, public []byte) {
	t.Helper()
	e, err := openpgp.NewEntity("rollgate", "", "rollgate@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	if passphrase != "" {
		if err := e.EncryptPrivateKeys([]byte(passphrase), nil); err != nil {
			t.Fatal(err)
		}
	}
	armored := func(typ string, serialize func(io.Writer) error) []byte {
		var buf bytes.Buffer
		w, err := armor.Encode(&buf, typ, nil)
		if err == nil {
			err = serialize(w)
		}
		if err == nil {
			err = w.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	private = armored(openpgp.PrivateKeyType, func(w io.Writer) error { return e.SerializePrivateWithoutSigning(w, nil) })
	public = armored(openpgp.PublicKeyType, e.Serialize)
	return private, public
}
