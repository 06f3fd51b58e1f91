"""Station ID and announcements: the schedule, the phrases, the TTS binary, the runner."""
