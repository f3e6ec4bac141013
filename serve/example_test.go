package serve_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/serve"
)

// A service on a small graph with a SQLite ledger in a temporary directory:
// the admin issues alice a token, and alice asks for her top 2. Nothing is
// protected here, so the list is the exact top 2 by AA and costs nothing.
func Example() {
	dir, err := os.MkdirTemp("", "dplp-serve-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	files := map[string]string{
		"graph.txt": "alice bob\nalice carol\nbob dave\ncarol dave\nbob erin\ndave frank\n",
		"marks.txt": "", // no protected pairs
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			fmt.Println(err)
			return
		}
	}
	// A model as a trainer would compile it (here f(x) = x).
	m, err := model.Compile(model.Fit{Variant: model.VariantDPLP, EpsP: 0.5, F: []float64{0, 0.5, 1}, HeldOutAUC: math.NaN()},
		model.Info{Score: "aa", Dataset: "example", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := model.Save(filepath.Join(dir, "aa.model"), m); err != nil {
		fmt.Println(err)
		return
	}
	const admin = "example-admin-token-0123456789abcdef"
	srv, err := serve.New(serve.Config{
		GraphPath:     filepath.Join(dir, "graph.txt"),
		ProtectedPath: filepath.Join(dir, "marks.txt"),
		ModelPath:     filepath.Join(dir, "aa.model"),
		StoreDSN:      "sqlite:" + filepath.Join(dir, "ledger.db"),
		CreateStore:   true,
		AdminToken:    admin,
		UserBudget:    10,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	do := func(method, path, token, body string, out any) int {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		json.NewDecoder(rec.Body).Decode(out)
		return rec.Code
	}
	var user struct{ Token string }
	fmt.Println(do(http.MethodPost, "/v1/admin/users", admin, `{"user": "alice"}`, &user))
	var list struct {
		Recommendations []string
		Cost, Spent     float64
		Fresh           bool
	}
	fmt.Println(do(http.MethodGet, "/v1/users/alice/recommendations?k=2", user.Token, "", &list))
	fmt.Println(list.Recommendations, list.Cost, list.Spent, list.Fresh)
	// Output:
	// 201
	// 200
	// [dave erin] 0 0 true
}
