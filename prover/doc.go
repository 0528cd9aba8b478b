// Package prover is cuzk's Groth16 prover over BLS12-381: proofs that gnark's
// groth16.Verify accepts with gnark's verifying key, computed by a Backend.
//
// A Backend (the CPU one here, CUDA in package gpu) computes the MSM/NTT Parts of each
// proof against a resident key; Prove adds the randomization (fresh r, s per proof
// from crypto/rand) and the α/β/δ terms exactly as gnark v0.14.0 does. Circuits using
// gnark's BSB22 commitments are refused (CommitmentError).
//
// # Key files
//
// Each circuit has one directory under the keys directory (--keys-dir):
//
//	<keys-dir>/<circuit>/
//	    manifest.json  written last: the circuit's shape, origin and the sha256 of every
//	                   other file; a directory without it is not a usable key
//	    circuit.r1cs   gnark R1CS (WriteTo)
//	    pk.bin         gnark ProvingKey, uncompressed (WriteRawTo): the portable form;
//	                   its sha256 (PKDigest) is the circuit's pk_digest
//	    pk.dump        the same key as gnark's WriteDump (native memory layout, this
//	                   architecture and gnark version only): loads several times faster;
//	                   a cache, optional, checked against its own digest
//	    vk.bin         gnark VerifyingKey (WriteTo): the bytes stored in cuzk.circuits.vk
//
// Setup (a development ceremony: NOT for production) and Import (keys from a real
// ceremony run with gnark elsewhere) build the directory under a temporary name and
// rename it into place, so a key directory is either complete or absent; neither
// overwrites an existing one. KeyStore loads each circuit once per process, verifies
// every file against the manifest before gnark parses it, and keeps the key resident
// on its backend.
//
// RandomKey and RandomKeyFor make timing-only keys (random bases; proofs do not
// verify) for sizes where gnark's Setup takes minutes.
package prover
