package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/consensys/gnark/backend/groth16"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/keys"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

type benchCmd struct {
	dirs
	Circuit string `required:"" help:"Built-in circuit to prove, e.g. synthetic-k16."`
	Compare string `enum:",gnark" default:"" help:"Also prove with this reference in the same run (gnark: groth16.Prove) and print the ratio."`
	Runs    int    `default:"5" help:"Timed runs of each prover (after one warm-up each)."`
	Backend string `enum:"cpu,cuda,auto" default:"cpu" help:"Our prover's backend."`
	Devices string `default:"0" help:"GPU for --backend cuda."`
	Seed    uint64 `default:"1" help:"Inputs seed."`
}

func (c benchCmd) Run(ctx context.Context, g *globals) error {
	if c.Runs < 1 {
		return usagef("--runs must be at least 1")
	}
	if err := c.resolve(); err != nil {
		return err
	}
	out := g.stdout
	reg := synth.NewRegistry(c.CacheDir)
	compiled, err := reg.Get(ctx, c.Circuit)
	if err != nil {
		if synth.IsBadInput(err) {
			return usageError{err.Error()}
		}
		return err
	}
	kd := keys.Dir(c.KeysDir)
	var pk *groth16bls.ProvingKey
	var vk *groth16bls.VerifyingKey
	if kd.Has(c.Circuit) {
		if pk, vk, err = kd.Load(c.Circuit, ""); err == nil {
			err = keys.Consistent(c.Circuit, compiled.CS, pk, vk)
		}
	}
	if pk == nil || err != nil {
		fmt.Fprintf(g.stderr, "running a development key setup for %s (not a production ceremony)...\n", c.Circuit)
		if pk, vk, _, err = kd.Setup(ctx, c.Circuit, compiled.CS); err != nil {
			return err
		}
	}
	inputs, err := synth.Inputs(c.Circuit, c.Seed)
	if err != nil {
		return err
	}
	fullWitness, err := compiled.Witness(inputs)
	if err != nil {
		return err
	}
	devs, err := openBackends(c.Backend, c.Devices, g.log)
	if err != nil {
		return err
	}
	backend := devs[0].Backend
	defer backend.Close()
	ppk, err := prover.NewProvingKey(c.Circuit, pk, compiled.NbConstraints())
	if err != nil {
		return err
	}
	t := time.Now()
	key, err := backend.LoadKey(ctx, ppk)
	if err != nil {
		return err
	}
	defer key.Close()
	hostname, _ := os.Hostname()
	fmt.Fprintf(out, "circuit %s: %d constraints, %d wires; backend %s; host %s; key load %s\n",
		c.Circuit, compiled.NbConstraints(), compiled.NbWires(), devs[0].Label, hostname, time.Since(t).Round(time.Millisecond))

	ours := func() (synthD, proveD time.Duration, err error) {
		t0 := time.Now()
		sol, err := synth.Solve(ctx, compiled, inputs)
		if err != nil {
			return 0, 0, err
		}
		t1 := time.Now()
		proofs, _, err := prover.Prove(ctx, backend, ppk, key, []*synth.Solution{sol})
		if err != nil {
			return 0, 0, err
		}
		t2 := time.Now()
		if err := verifyProof(vk, proofs[0], sol.Public); err != nil {
			return 0, 0, fmt.Errorf("our proof does not verify: %w", err)
		}
		return t1.Sub(t0), t2.Sub(t1), nil
	}
	reference := func() (time.Duration, error) {
		t0 := time.Now()
		_, err := groth16.Prove(compiled.CS, pk, fullWitness)
		return time.Since(t0), err
	}

	// One warm-up each, then interleaved runs so drift affects both alike.
	if _, _, err := ours(); err != nil {
		return err
	}
	if c.Compare != "" {
		if _, err := reference(); err != nil {
			return fmt.Errorf("gnark prove: %w", err)
		}
	}
	var oursTotal, oursSynth, oursProve, refTotal []time.Duration
	for i := range c.Runs {
		s, p, err := ours()
		if err != nil {
			return err
		}
		oursSynth, oursProve, oursTotal = append(oursSynth, s), append(oursProve, p), append(oursTotal, s+p)
		line := fmt.Sprintf("run %d: cuzk %s (synth %s, prove %s)", i+1, ms(s+p), ms(s), ms(p))
		if c.Compare != "" {
			r, err := reference()
			if err != nil {
				return fmt.Errorf("gnark prove: %w", err)
			}
			refTotal = append(refTotal, r)
			line += fmt.Sprintf("; gnark %s", ms(r))
		}
		fmt.Fprintln(out, line)
	}
	fmt.Fprintf(out, "cuzk median: total %s, synth %s, prove %s\n", ms(median(oursTotal)), ms(median(oursSynth)), ms(median(oursProve)))
	if c.Compare != "" {
		fmt.Fprintf(out, "gnark groth16.Prove median (solve + prove): %s\n", ms(median(refTotal)))
		fmt.Fprintf(out, "speedup_vs_gnark: %.2f\n", float64(median(refTotal))/float64(median(oursTotal)))
	}
	return nil
}

func verifyProof(vk *groth16bls.VerifyingKey, proof *groth16bls.Proof, public []byte) error {
	var vkb, pb []byte
	var err error
	if vkb, err = encodeVK(vk); err != nil {
		return err
	}
	if pb, err = encodeProof(proof); err != nil {
		return err
	}
	return verifyBytes(vkb, pb, public)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
