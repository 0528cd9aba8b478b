package prover

import (
	"bytes"
	"fmt"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"
)

// Verify checks stored bytes with gnark alone: vkBytes is gnark's
// VerifyingKey.WriteTo, proofBytes gnark's Proof.WriteTo, publicWitness gnark's
// witness.MarshalBinary of the public part (the formats of cuzk.circuits.vk,
// cuzk.proofs.proof and cuzk.proofs.public_witness).
func Verify(vkBytes, proofBytes, publicWitness []byte) error {
	vk, err := parseVK(vkBytes)
	if err != nil {
		return err
	}
	proof, err := ParseProof(proofBytes)
	if err != nil {
		return err
	}
	return VerifyProof(vk, proof, publicWitness)
}

// VerifyProof checks a proof against a parsed verifying key and the public witness
// bytes (witness.MarshalBinary of the public part).
func VerifyProof(vk *groth16bls.VerifyingKey, proof *groth16bls.Proof, publicWitness []byte) error {
	w, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		return err
	}
	if err := w.UnmarshalBinary(publicWitness); err != nil {
		return fmt.Errorf("verify: parse public witness: %w", err)
	}
	vec, ok := w.Vector().(fr.Vector)
	if !ok {
		return fmt.Errorf("verify: public witness is not over BLS12-381")
	}
	if len(vec) != len(vk.G1.K)-1 {
		return fmt.Errorf("verify: public witness has %d values, verifying key expects %d", len(vec), len(vk.G1.K)-1)
	}
	if err := groth16bls.Verify(proof, vk, vec); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	return nil
}

// ParseProof decodes gnark's Proof.WriteTo encoding (with subgroup checks).
func ParseProof(b []byte) (*groth16bls.Proof, error) {
	proof := new(groth16bls.Proof)
	n, err := proof.ReadFrom(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parse proof: %w", err)
	}
	if n != int64(len(b)) {
		return nil, fmt.Errorf("parse proof: %d trailing bytes", int64(len(b))-n)
	}
	return proof, nil
}

// EncodeProof returns gnark's Proof.WriteTo encoding: the bytes of cuzk.proofs.proof.
func EncodeProof(p *groth16bls.Proof) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := p.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode proof: %w", err)
	}
	return buf.Bytes(), nil
}

// parseVK decodes gnark's VerifyingKey.WriteTo encoding (with subgroup checks) and
// rejects keys with commitments.
func parseVK(b []byte) (*groth16bls.VerifyingKey, error) {
	vk := new(groth16bls.VerifyingKey)
	n, err := vk.ReadFrom(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parse verifying key: %w", err)
	}
	if n != int64(len(b)) {
		return nil, fmt.Errorf("parse verifying key: %d trailing bytes", int64(len(b))-n)
	}
	if len(vk.CommitmentKeys) != 0 {
		return nil, fmt.Errorf("parse verifying key: it has gnark commitments, which cuzk does not support")
	}
	return vk, nil
}
