package devinfo

// Fixed is a LatestSamples that always answers the same readings: telemetry recorded
// elsewhere (an attempt row's jsonb) replayed, or readings on a host without a GPU.
type Fixed []Sample

// Latest is the reading of device index, if there is one.
func (f Fixed) Latest(index int) (Sample, bool) {
	for _, s := range f {
		if s.Index == index {
			return s, true
		}
	}
	return Sample{}, false
}

// LatestAll is every reading.
func (f Fixed) LatestAll() []Sample { return f }
