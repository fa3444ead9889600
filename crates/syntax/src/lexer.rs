//! Tokenizer. (Implementation in progress.)
