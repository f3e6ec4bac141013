package transform

import "testing"

func benchTransform(b *testing.B, k Kind, grad bool) {
	tr, err := New(Spec{Kind: k}, rng(10))
	if err != nil {
		b.Fatal(err)
	}
	randomize(tr, rng(11), 0.3)
	d := make([]float64, tr.NumParams())
	xs := make([]float64, 256)
	for i := range xs {
		xs[i] = float64(i) / 255
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x := xs[i&255]
		if grad {
			tr.Grad(x, 1, d)
		} else {
			tr.Eval(x)
		}
	}
}

func BenchmarkEvalDPLP(b *testing.B) { benchTransform(b, KindDPLP, false) }
func BenchmarkGradDPLP(b *testing.B) { benchTransform(b, KindDPLP, true) }
func BenchmarkEvalUMNN(b *testing.B) { benchTransform(b, KindUMNN, false) }
func BenchmarkGradUMNN(b *testing.B) { benchTransform(b, KindUMNN, true) }
func BenchmarkEvalLin(b *testing.B)  { benchTransform(b, KindLin, false) }
func BenchmarkGradLin(b *testing.B)  { benchTransform(b, KindLin, true) }

func BenchmarkTableDelta(b *testing.B) {
	tr, _ := New(Spec{Kind: KindDPLP}, rng(12))
	tab, _ := Compile(tr, DefaultGrid)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tab.Delta(0.0137)
	}
}
