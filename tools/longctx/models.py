"""The pydantic results and inputs of the longctx tools."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ChunkInfo(BaseModel):
    index: int = Field(description="0-based chunk index.")
    start_char: int
    end_char: int = Field(description="End offset (exclusive) in the original text.")
    tokens: int
    preview: str = Field(description="The first characters of the chunk.")


class ChunkResult(BaseModel):
    encoding: str
    text_chars: int
    text_tokens: int
    chunk_tokens: int
    overlap_tokens: int
    n_chunks: int
    covers_text: bool = Field(description="True when the chunks together cover every character.")
    chunks: list[ChunkInfo]
    file: str | None = Field(None, description="JSONL file with every chunk's full text, when asked for.")


class ChunkReport(BaseModel):
    part: int = Field(description="1-based chunk number.")
    start_char: int
    end_char: int
    status: str = Field(description="answer, na or failed.")
    text: str = Field("", description="The worker's reply (shortened to 300 characters).")
    confidence: int | None = None
    error: str | None = None


class AnswerResult(BaseModel):
    answer: str
    summary: str = Field(description="One line: how many chunks were read, found the information, failed.")
    task_kind: str
    topology: str
    chunks_total: int
    chunks_read: int
    chunks_with_answer: int
    chunks_na: int
    chunks_failed: list[ChunkReport] = Field(description="Chunks whose model call failed after retries.")
    evidence: list[ChunkReport] = Field(description="The reports that were not NA (at most 40).")
    aggregator: str = Field(description="llm (a manager call), code (exact min/max/sum) or none (all NA).")
    planner_instruction: str | None = None
    text_tokens: int
    chunk_tokens: int = Field(description="Token budget of each worker prompt, template included.")
    text_tokens_per_chunk: int = Field(description="Token budget for the text inside each chunk.")
    overlap_tokens: int
    encoding: str
    model: str
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    collapse_rounds: int = 0
    notes: list[str] = Field(default_factory=list)


class SingleShotResult(BaseModel):
    answer: str
    task_kind: str
    text_tokens: int
    model: str
    prompt_tokens: int
    completion_tokens: int


class Document(BaseModel):
    task: str = Field(description="The question or instruction.")
    answers: list[str]
    text: str | None = Field(None, description="The document inline, or give `path`.")
    path: str | None = None


class CandidateScore(BaseModel):
    chunk_tokens: int
    accuracy: float
    correct: int
    documents: int
    mean_chunks: float
    llm_calls: int
    failed_chunks: int


class ChooseResult(BaseModel):
    best_chunk_tokens: int
    best_accuracy: float
    candidates: list[CandidateScore]
    single_shot_accuracy: float | None = None
    documents: int
    mean_text_tokens: float
    recommendation: str


class SinglePoint(BaseModel):
    tokens: int = Field(gt=0)
    accuracy: float = Field(ge=0, le=1)
    items: int | None = Field(None, gt=0, description="Items measured.")


class ChunkedPoint(BaseModel):
    tokens: int = Field(gt=0)
    chunk_tokens: int = Field(gt=0)
    accuracy: float = Field(ge=0, le=1)
    items: int | None = Field(None, gt=0, description="Items measured.")
    n_chunks: int | None = Field(None, gt=0, description="Default: ceil(tokens/chunk_tokens).")


class FitRow(BaseModel):
    series: str
    tokens: int
    chunk_tokens: int | None
    accuracy: float
    loss: float
    fitted_loss: float | None


class NoiseFitResult(BaseModel):
    alpha: float | None = Field(description="Single-shot loss L(T) = alpha * T^beta, T in tokens.")
    beta: float | None
    r2: float | None
    per_chunk_loss: float | None
    aggregator_loss: float | None
    reference_chunk_tokens: int | None
    model_noise_per_chunk: float | None
    task_noise_per_chunk: float | None
    target_tokens: int
    single_loss_at_target: float
    chunked_loss_at_target: float | None
    single_accuracy_at_target: float
    chunked_accuracy_at_target: float | None
    regime: str = Field(description="trivial, silo or brain_fog.")
    explanation: str
    crossover_tokens: float | None = Field(description="Length beyond which chunked beats single-shot (Prop. 3.1).")
    predicted_best_chunk_tokens: float | None = Field(
        description="argmin_c of (T/c)(alpha c^beta + task noise per chunk), when task noise > 0 and beta > 1.")
    rows: list[FitRow]
    notes: list[str] = Field(default_factory=list)
    plot_png: str | None = Field(None, description="PNG: accuracy against length, measured and fitted.")
