package openai

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{name: "none"},
		{name: "milliseconds", header: map[string]string{"retry-after-ms": "1500"}, want: 1500 * time.Millisecond},
		{name: "milliseconds win", header: map[string]string{"retry-after-ms": "20", "retry-after": "9"}, want: 20 * time.Millisecond},
		{name: "seconds", header: map[string]string{"retry-after": "3"}, want: 3 * time.Second},
		{name: "fractional seconds", header: map[string]string{"retry-after": "0.5"}, want: 500 * time.Millisecond},
		{name: "HTTP date", header: map[string]string{"retry-after": now.Add(7 * time.Second).Format(http.TimeFormat)}, want: 7 * time.Second},
		{name: "date in the past", header: map[string]string{"retry-after": now.Add(-time.Minute).Format(http.TimeFormat)}},
		{name: "negative", header: map[string]string{"retry-after": "-1"}},
		{name: "garbage", header: map[string]string{"retry-after": "soon", "retry-after-ms": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tt.want {
				t.Errorf("retryAfter(%v) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}
