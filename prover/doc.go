// Package prover is cuzk's Groth16 prover over BLS12-381: proofs that gnark's
// groth16.Verify accepts with gnark's verifying key, computed by a Backend.
//
// A Backend (the CPU one here, CUDA in package gpu) computes the MSM/NTT Parts of each
// proof against a resident key; Prove adds the randomization (fresh r, s per proof
// from crypto/rand) and the α/β/δ terms exactly as gnark v0.14.0 does. Circuits using
// gnark's BSB22 commitments are refused (CommitmentError).
//
// Key files (pk, vk, R1CS per circuit under --keys-dir) are package keys' business.
//
// RandomKey and RandomKeyFor make timing-only keys (random bases; proofs do not
// verify) for sizes where gnark's Setup takes minutes.
package prover
