package v1alpha1

// Verify says what a version's image must prove before it rolls out.
type Verify struct {
	// Cosign: the image must carry a cosign signature by the team's key.
	// +required
	Cosign *CosignVerify `json:"cosign"`
}

// CosignVerify checks the cosign signatures an image carries in its registry (the tag
// sha256-<digest>.sig that `cosign sign --key` pushes) against a public key.
type CosignVerify struct {
	// PublicKeySecretRef names the Secret in the config's namespace that holds the public key, PEM
	// (cosign.pub, as `cosign generate-key-pair` writes it): ECDSA, RSA or Ed25519.
	// +required
	PublicKeySecretRef SecretKeyReference `json:"publicKeySecretRef"`
}

// SecretKeyReference names a key of a Secret in the config's namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key in the Secret's data. Default: cosign.pub.
	// +kubebuilder:default="cosign.pub"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// DefaultPublicKeyKey is the key of a Secret that holds a cosign public key.
const DefaultPublicKeyKey = "cosign.pub"
