package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// kube asks the API server what up waits for.
type kube struct{ client kubernetes.Interface }

func newKube(kubeconfig string) (*kube, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &kube{client: client}, nil
}

func (k *kube) ready(ctx context.Context) error {
	body, err := k.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s", err, body)
	}
	return nil
}

func (k *kube) nodeReady(ctx context.Context) error {
	node, err := k.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s: Ready is %s: %s", nodeName, c.Status, c.Message)
		}
	}
	return fmt.Errorf("node %s: %w", nodeName, errNotYet)
}

func (k *kube) dnsAvailable(ctx context.Context) error {
	d, err := k.client.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return nil
		}
	}
	pods, err := k.client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil {
				return fmt.Errorf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				return fmt.Errorf("pod %s: %s: %s", p.Name, c.Type, c.Message)
			}
		}
	}
	return fmt.Errorf("deployment coredns: %w (%d pods)", errNotYet, len(pods.Items))
}
