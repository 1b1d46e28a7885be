package v1alpha1

// Verify says what a version's image must prove before it rolls out.
type Verify struct {
	// Cosign: the image must carry a cosign signature by the team's key or identity.
	// +required
	Cosign *CosignVerify `json:"cosign"`
}

// CosignVerify checks the cosign signatures an image carries in its registry (the tag
// sha256-<digest>.sig that `cosign sign` pushes): made with the team's key, or keyless, with a
// short-lived certificate for the team's identity.
// +kubebuilder:validation:XValidation:rule="has(self.publicKeySecretRef) != has(self.keyless)",message="set one of publicKeySecretRef and keyless"
type CosignVerify struct {
	// PublicKeySecretRef names the Secret in the config's namespace that holds the public key, PEM
	// (cosign.pub, as `cosign generate-key-pair` writes it): ECDSA, RSA or Ed25519.
	// +optional
	PublicKeySecretRef *SecretKeyReference `json:"publicKeySecretRef,omitempty"`

	// Keyless accepts a signature made with a certificate a Sigstore certificate authority (Fulcio)
	// issued to an OIDC identity, and recorded in a transparency log (Rekor): `cosign sign` without
	// a key, as in a CI workflow. The certificate must chain to a CA of the trusted root, have been
	// valid when the log recorded the signature, and name the issuer and subject.
	// +optional
	Keyless *CosignKeyless `json:"keyless,omitempty"`
}

// CosignKeyless is the identity a keyless signature's certificate must name, and the Sigstore
// instance that vouches for it.
// +kubebuilder:validation:XValidation:rule="has(self.subject) != has(self.subjectRegExp)",message="set one of subject and subjectRegExp"
type CosignKeyless struct {
	// Issuer is the OIDC issuer the certificate names, exactly: for GitHub Actions
	// https://token.actions.githubusercontent.com.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Issuer string `json:"issuer"`

	// Subject is the identity the certificate names, exactly: an e-mail address, or a URI such as
	// the workflow that signed, https://github.com/acme/shop/.github/workflows/release.yaml@refs/heads/main.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Subject string `json:"subject,omitempty"`

	// SubjectRegExp matches the identity instead (Go syntax, starting with ^: an expression
	// matches anywhere in the subject unless anchored), for a subject that names a release tag:
	// ^https://github\.com/acme/shop/\.github/workflows/release\.yaml@refs/tags/v.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('^')",message="subjectRegExp starts with ^: unanchored, it matches any subject that merely contains it"
	SubjectRegExp string `json:"subjectRegExp,omitempty"`

	// TrustedRootRef names the ConfigMap in the config's namespace that holds the Sigstore trusted
	// root (trusted_root.json: the certificate authorities and transparency logs, with their keys
	// and validity), of the public Sigstore instance or of the team's own.
	// +required
	TrustedRootRef ConfigMapKeyReference `json:"trustedRootRef"`
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

// ConfigMapKeyReference names a key of a ConfigMap in the config's namespace.
type ConfigMapKeyReference struct {
	// Name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key in the ConfigMap's data. Default: trusted_root.json.
	// +kubebuilder:default="trusted_root.json"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// Default keys of the objects spec.verify names.
const (
	DefaultPublicKeyKey   = "cosign.pub"
	DefaultTrustedRootKey = "trusted_root.json"
)
