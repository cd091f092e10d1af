// Package browsertest drives the inspector (package inspect) in a real
// headless Chromium with chromedp. It is a module of its own, so that
// chromedp stays out of what a program importing inspect downloads; its
// only content is its test.
package browsertest
