package embed

// dotGo is the portable a·b.
func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	for len(a) >= 4 && len(b) >= 4 {
		s0 += a[0] * b[0]
		s1 += a[1] * b[1]
		s2 += a[2] * b[2]
		s3 += a[3] * b[3]
		a, b = a[4:], b[4:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// update2Go is the portable update2.
func update2Go(g float32, in, out, gin []float32) {
	out = out[:len(in)]
	gin = gin[:len(in)]
	for len(in) >= 4 && len(out) >= 4 && len(gin) >= 4 {
		o0, o1, o2, o3 := out[0], out[1], out[2], out[3]
		gin[0] += g * o0
		gin[1] += g * o1
		gin[2] += g * o2
		gin[3] += g * o3
		out[0] = o0 + g*in[0]
		out[1] = o1 + g*in[1]
		out[2] = o2 + g*in[2]
		out[3] = o3 + g*in[3]
		in, out, gin = in[4:], out[4:], gin[4:]
	}
	for i := range in {
		o := out[i]
		gin[i] += g * o
		out[i] = o + g*in[i]
	}
}

// axpy sets y += a*x.
func axpy(a float32, x, y []float32) {
	y = y[:len(x)]
	for len(x) >= 4 && len(y) >= 4 {
		y[0] += a * x[0]
		y[1] += a * x[1]
		y[2] += a * x[2]
		y[3] += a * x[3]
		x, y = x[4:], y[4:]
	}
	for i := range x {
		y[i] += a * x[i]
	}
}

// dot returns a·b (len(b) >= len(a)).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	if n := len(a) &^ 7; useSIMD && n > 0 {
		return dotSIMD(&a[0], &b[0], n) + dotGo(a[n:], b[n:])
	}
	return dotGo(a, b)
}

// update2 does gin += g*out and out += g*in in one pass (gin uses the old
// out); out and gin must be at least as long as in.
func update2(g float32, in, out, gin []float32) {
	out = out[:len(in)]
	gin = gin[:len(in)]
	if n := len(in) &^ 7; useSIMD && n > 0 {
		update2SIMD(g, &in[0], &out[0], &gin[0], n)
		in, out, gin = in[n:], out[n:], gin[n:]
	}
	update2Go(g, in, out, gin)
}
