// Package synth turns circuit names and inputs into solved witnesses.
//
// Circuits: built-in families resolved by name (see Circuit), compiled to a
// BLS12-381 R1CS without commitments, and circuits imported from an externally
// compiled gnark R1CS. A Registry compiles each circuit once per process and caches
// it on disk, keyed by name, gnark version and CircuitRevision:
//
//	synthetic-k<K>               exactly 2^K constraints, full-size values, 2^(K-6) parallel lanes
//	merkle-poseidon2-d<D>-c<C>   C Poseidon2 Merkle inclusion proofs of depth D (~188·D·C)
//	sha256-preimage-b<N>         SHA-256 preimage of N bytes (~26.5k per 64-byte block)
//	porep-k<K>                   just under 2^K, shaped like a PoRep partition: 2^(K-16) challenges,
//	                             each a labelling over bits and a Poseidon2 inclusion path
//
// Inputs: Inputs prints valid inputs for a built-in circuit; Compiled.Witness parses
// inputs JSON (flat dotted names, nested objects/arrays, or both) or gnark's
// full-witness binary, with strict validation. Every problem with the inputs,
// including an unsatisfied constraint, is an *InputError (see IsBadInput).
//
// Solving: Solve returns a Solution (W, A, B, public witness, and the gnark witness
// for reference provers): gnark's solution, computed by the block solver
// (blocksolve.go) where the circuit splits into independent blocks, else by gnark's
// solver. The block solver leaves the constraints that solve no wire unchecked: a
// proof of inputs that fail one does not verify, and Compiled.Check then gives the
// constraint's error. EstimateBytes bounds the heap one Solve allocates, for memory
// budgets that reserve before solving.
//
// gnark logs through its global logger (github.com/consensys/gnark/logger): a
// binary that wants quiet compiles and solves should call logger.Disable().
package synth
