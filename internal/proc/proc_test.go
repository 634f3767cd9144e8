package proc

import (
	"os"
	"os/exec"
	"testing"
)

func TestProcesses(t *testing.T) {
	self, ok := Read(os.Getpid())
	if !ok || self.PPID != os.Getppid() || self.State == 'Z' || self.Start == "" {
		t.Fatalf("this process: %+v, %v", self, ok)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kids := Descendants(os.Getpid())
	var sleep *Proc
	for i := range kids {
		if kids[i].PID == cmd.Process.Pid {
			sleep = &kids[i]
		}
	}
	if sleep == nil || sleep.Comm != "sleep" || !Alive(*sleep) {
		t.Fatalf("the child is not among the descendants: %+v", kids)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if Alive(*sleep) || len(Running([]Proc{*sleep, self})) != 1 {
		t.Error("a reaped child is alive")
	}
	if _, ok := Read(-1); ok {
		t.Error("read pid -1")
	}
}
