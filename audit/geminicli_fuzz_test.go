package audit

import (
	"bytes"
	"os"
	"testing"
)

func FuzzParseGeminiCLI(f *testing.F) {
	// The real chat's first records (its session line, the context, the prompt, the first tool
	// call and its response), small enough for the fuzzer to mutate.
	if data, err := os.ReadFile(geminiChat); err == nil {
		lines := bytes.SplitAfter(data, []byte("\n"))
		f.Add(bytes.Join(lines[:min(len(lines), 9)], nil))
	}
	f.Add([]byte(`{"sessionId":"s","projectHash":"` + string(bytes.Repeat([]byte("a"), 64)) + `"}` + "\n" +
		`{"id":"m","type":"gemini","content":"","toolCalls":[{"id":"c","name":"read_file","args":{"file_path":"/p/a"},"result":[{"functionResponse":{"id":"c","name":"read_file","response":{"output":"x\n\n\n<hook_context>e</hook_context>"}}}],"status":"success"}]}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !isGeminiChat(data) {
			return
		}
		s, err := parseGeminiCLI("f.jsonl", data)
		replayAny(t, s, err)
	})
}
