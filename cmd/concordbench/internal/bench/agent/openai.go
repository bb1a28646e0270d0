package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
)

// OpenAI talks to any OpenAI-compatible chat-completions endpoint with tool
// calling (OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM, ...).
type OpenAI struct {
	BaseURL     string // e.g. https://api.openai.com/v1
	Model       string
	APIKey      string // sent as a Bearer token when not empty
	Temperature float64
	MaxTokens   int
	Client      *http.Client
	// Retries on 429, 5xx and transport errors, with doubling backoff.
	Retries int
	Backoff time.Duration
}

// Name implements Agent.
func (o *OpenAI) Name() string { return "openai:" + o.Model }

// Session implements Agent; the model keeps no state between calls.
func (o *OpenAI) Session(tasks.Task) Session { return o }

type oaFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaToolCall struct {
	ID       string     `json:"id"`
	Type     string     `json:"type"`
	Function oaFunction `json:"function"`
}

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaTool struct {
	Type     string   `json:"type"`
	Function ToolSpec `json:"function"`
}

type oaRequest struct {
	Model       string      `json:"model"`
	Messages    []oaMessage `json:"messages"`
	Tools       []oaTool    `json:"tools,omitempty"`
	ToolChoice  string      `json:"tool_choice,omitempty"`
	Temperature float64     `json:"temperature"`
	MaxTokens   int         `json:"max_tokens,omitempty"`
}

type oaResponse struct {
	Choices []struct {
		Message oaMessage `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Request builds the chat-completions body for a context.
func (o *OpenAI) Request(msgs []Message, tools []ToolSpec) ([]byte, error) {
	req := oaRequest{Model: o.Model, Temperature: o.Temperature, MaxTokens: o.MaxTokens}
	for _, m := range msgs {
		om := oaMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		content := m.Content
		if m.Role != "assistant" || content != "" {
			om.Content = &content
		}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, oaToolCall{ID: tc.ID, Type: "function", Function: oaFunction{Name: tc.Name, Arguments: tc.Arguments}})
		}
		req.Messages = append(req.Messages, om)
	}
	for _, t := range tools {
		req.Tools = append(req.Tools, oaTool{Type: "function", Function: t})
	}
	if len(req.Tools) > 0 {
		req.ToolChoice = "auto"
	}
	return json.Marshal(req)
}

// Next implements Session.
func (o *OpenAI) Next(ctx context.Context, msgs []Message, tools []ToolSpec) (Reply, error) {
	body, err := o.Request(msgs, tools)
	if err != nil {
		return Reply{}, fmt.Errorf("openai request: %w", err)
	}
	url := strings.TrimRight(o.BaseURL, "/") + "/chat/completions"
	client := o.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Minute}
	}
	backoff := o.Backoff
	if backoff <= 0 {
		backoff = time.Second
	}
	var lastErr error
	for attempt := 0; attempt <= o.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return Reply{}, ctx.Err()
			}
			backoff *= 2
		}
		rep, retry, err := o.post(ctx, client, url, body)
		if err == nil {
			return rep, nil
		}
		lastErr = err
		if !retry {
			break
		}
	}
	return Reply{}, lastErr
}

func (o *OpenAI) post(ctx context.Context, client *http.Client, url string, body []byte) (Reply, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Reply{}, false, fmt.Errorf("openai %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Reply{}, ctx.Err() == nil, fmt.Errorf("openai %s: %w", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return Reply{}, true, fmt.Errorf("openai %s: read body: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		retry := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return Reply{}, retry, fmt.Errorf("openai %s: HTTP %d: %s", url, resp.StatusCode, clip(string(data), 500))
	}
	var or oaResponse
	if err := json.Unmarshal(data, &or); err != nil {
		return Reply{}, false, fmt.Errorf("openai %s: decode response: %w", url, err)
	}
	if or.Error != nil {
		return Reply{}, false, fmt.Errorf("openai %s: %s", url, or.Error.Message)
	}
	if len(or.Choices) == 0 {
		return Reply{}, false, errors.New("openai: response has no choices")
	}
	om := or.Choices[0].Message
	m := Message{Role: "assistant"}
	if om.Content != nil {
		m.Content = *om.Content
	}
	for i, tc := range om.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	rep := Reply{Message: m}
	if u := or.Usage; u != nil {
		rep.Usage = &Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
		if u.PromptTokensDetails != nil {
			rep.Usage.CachedTokens = u.PromptTokensDetails.CachedTokens
		}
	}
	return rep, false, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
